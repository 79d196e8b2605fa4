// The C++ side of edgert_trt.h, built by `cc` against the target's TensorRT headers (8.5 to 11).
// Nothing here links TensorRT or CUDA: TensorRT's C++ API is virtual calls on objects its four C
// entry points create, and those entry points and the CUDA runtime come in `edgert_trt_symbols`.
// Enum values are used by name only: their numbers changed between releases.

#include "edgert_trt.h"

#include <NvInfer.h>
#include <NvOnnxParser.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "logger.h"
#include "plugins.h"
#include "version.h"

using edgert::Logger;

using namespace nvinfer1;

namespace {

constexpr int kHostToDevice = 1; // cudaMemcpyHostToDevice
constexpr int kDeviceToHost = 2; // cudaMemcpyDeviceToHost

void fail(edgert_trt_error* error, const std::string& message) {
    if (error != nullptr) {
        std::snprintf(error->message, sizeof(error->message), "%s", message.c_str());
    }
}

// Whether the parsed network has Q/DQ layers: TensorRT takes INT8 scales from them.
bool has_qdq(INetworkDefinition& network) {
    for (int32_t i = 0; i < network.getNbLayers(); ++i) {
        LayerType type = network.getLayer(i)->getType();
        if (type == LayerType::kQUANTIZE || type == LayerType::kDEQUANTIZE) {
            return true;
        }
    }
    return false;
}

template <typename T>
struct Deleter {
    void operator()(T* object) const { delete object; }
};
template <typename T>
using Owned = std::unique_ptr<T, Deleter<T>>;

int32_t edgert_dtype(DataType type) {
    switch (type) {
    case DataType::kFLOAT: return EDGERT_TRT_F32;
    case DataType::kHALF: return EDGERT_TRT_F16;
    case DataType::kINT8: return EDGERT_TRT_I8;
    case DataType::kINT32: return EDGERT_TRT_I32;
    case DataType::kBOOL: return EDGERT_TRT_BOOL;
    case DataType::kUINT8: return EDGERT_TRT_U8;
#if NV_TENSORRT_MAJOR > 8 || (NV_TENSORRT_MAJOR == 8 && NV_TENSORRT_MINOR >= 6)
    case DataType::kFP8: return EDGERT_TRT_FP8;
#endif
#if NV_TENSORRT_MAJOR >= 10
    case DataType::kBF16: return EDGERT_TRT_BF16;
    case DataType::kINT64: return EDGERT_TRT_I64;
#endif
    default: return EDGERT_TRT_OTHER;
    }
}

size_t dtype_bytes(DataType type) {
    switch (type) {
    case DataType::kHALF: return 2;
    case DataType::kINT8:
    case DataType::kBOOL:
    case DataType::kUINT8: return 1;
#if NV_TENSORRT_MAJOR > 8 || (NV_TENSORRT_MAJOR == 8 && NV_TENSORRT_MINOR >= 6)
    case DataType::kFP8: return 1;
#endif
#if NV_TENSORRT_MAJOR >= 10
    case DataType::kBF16: return 2;
    case DataType::kINT64: return 8;
#endif
    default: return 4;
    }
}

Dims to_dims(int32_t nb_dims, const int64_t* values) {
    Dims dims{};
    dims.nbDims = nb_dims;
    for (int32_t i = 0; i < nb_dims; ++i) {
        dims.d[i] = static_cast<decltype(dims.d[0] + 0)>(values[i]);
    }
    return dims;
}

std::string shape_text(const Dims& dims) {
    std::string text = "[";
    for (int32_t i = 0; i < dims.nbDims; ++i) {
        text += (i ? ", " : "") + std::to_string(static_cast<long long>(dims.d[i]));
    }
    return text + "]";
}

} // namespace

#if NV_TENSORRT_MAJOR < 11
#include "calibrator.h"
using edgert::Calibrator;
#endif

struct edgert_trt_runtime {
    edgert_trt_symbols sym;
    Logger logger;
    bool plugins = false;
    Owned<IRuntime> runtime;
    int32_t version = 0;

    std::string cuda_error(const char* what, int code) const {
        const char* text = sym.cuda_get_error_string ? sym.cuda_get_error_string(code) : nullptr;
        return std::string(what) + " failed: " + (text ? text : ("CUDA error " + std::to_string(code)));
    }
};

struct edgert_trt_engine {
    edgert_trt_runtime* runtime;
    Owned<ICudaEngine> engine;
};

struct DeviceBuffer {
    std::string name;
    bool is_input = false;
    void* device = nullptr;
    size_t capacity = 0;
};

struct edgert_trt_context {
    edgert_trt_engine* engine;
    Owned<IExecutionContext> context;
    void* stream = nullptr;
    void* events[4] = {nullptr, nullptr, nullptr, nullptr};
    std::vector<DeviceBuffer> buffers;

    const edgert_trt_symbols& sym() const { return engine->runtime->sym; }
    std::string cuda_error(const char* what, int code) const { return engine->runtime->cuda_error(what, code); }
};

#define EDGERT_GUARD_BEGIN try {
#define EDGERT_GUARD_END(error, result)                                                                \
    }                                                                                                  \
    catch (const std::exception& e) {                                                                  \
        fail(error, std::string("TensorRT shim: ") + e.what());                                        \
        return result;                                                                                 \
    }                                                                                                  \
    catch (...) {                                                                                      \
        fail(error, "TensorRT shim: unknown C++ exception");                                           \
        return result;                                                                                 \
    }

extern "C" {

edgert_trt_runtime* edgert_trt_runtime_create(const edgert_trt_symbols* symbols, edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    if (symbols == nullptr || symbols->create_infer_runtime == nullptr || symbols->get_infer_lib_version == nullptr) {
        fail(error, "libnvinfer's entry points are missing");
        return nullptr;
    }
    int32_t version = symbols->get_infer_lib_version();
    std::string mismatch = edgert::header_mismatch(version, NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR);
    if (!mismatch.empty()) {
        fail(error, mismatch);
        return nullptr;
    }
    auto runtime = std::make_unique<edgert_trt_runtime>();
    runtime->sym = *symbols;
    runtime->version = version;
    runtime->logger.begin();
    if (symbols->init_plugins != nullptr) {
        std::string reason;
        if (!edgert::init_plugins_once(symbols->init_plugins, reason)) {
            fail(error, "initLibNvInferPlugins failed: " + reason);
            return nullptr;
        }
        runtime->plugins = true;
    }
    runtime->runtime.reset(
        static_cast<IRuntime*>(symbols->create_infer_runtime(&runtime->logger, NV_TENSORRT_VERSION)));
    if (!runtime->runtime) {
        fail(error, "createInferRuntime failed: " + runtime->logger.take("no reason given"));
        return nullptr;
    }
    return runtime.release();
    EDGERT_GUARD_END(error, nullptr)
}

void edgert_trt_runtime_destroy(edgert_trt_runtime* runtime) { delete runtime; }

int32_t edgert_trt_runtime_version(const edgert_trt_runtime* runtime) { return runtime->version; }

int edgert_trt_runtime_device(const edgert_trt_runtime* runtime, edgert_trt_device* device, edgert_trt_error* error) {
    const edgert_trt_symbols& sym = runtime->sym;
    int ordinal = 0;
    int code = sym.cuda_get_device(&ordinal);
    if (code != 0) {
        fail(error, runtime->cuda_error("cudaGetDevice", code));
        return 1;
    }
    const int attributes[3] = {cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor,
                               cudaDevAttrIntegrated};
    int32_t* targets[3] = {&device->sm_major, &device->sm_minor, &device->integrated};
    for (int i = 0; i < 3; ++i) {
        int value = 0;
        code = sym.cuda_device_get_attribute(&value, attributes[i], ordinal);
        if (code != 0) {
            fail(error, runtime->cuda_error("cudaDeviceGetAttribute", code));
            return 1;
        }
        *targets[i] = value;
    }
    device->dla_cores = runtime->runtime->getNbDLACores();
    return 0;
}

edgert_trt_engine* edgert_trt_engine_load(edgert_trt_runtime* runtime, const void* plan, size_t bytes,
                                          int32_t dla_core, edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    runtime->logger.begin();
    if (dla_core >= 0) {
        // setDLACore on a device without that core does nothing: the engine would run elsewhere.
        int32_t cores = runtime->runtime->getNbDLACores();
        if (dla_core >= cores) {
            fail(error, "DLA core " + std::to_string(dla_core) + " does not exist: this device has " +
                            std::to_string(cores) + " DLA cores");
            return nullptr;
        }
        runtime->runtime->setDLACore(dla_core);
    }
    auto engine = std::make_unique<edgert_trt_engine>();
    engine->runtime = runtime;
    engine->engine.reset(runtime->runtime->deserializeCudaEngine(plan, bytes));
    if (!engine->engine) {
        std::string hint = runtime->plugins ? "" : " (libnvinfer_plugin was not found: engines that use "
                                                   "TensorRT's plugins, such as EfficientNMS_TRT, need it)";
        fail(error, "deserializeCudaEngine failed: " + runtime->logger.take("no reason given") + hint);
        return nullptr;
    }
    return engine.release();
    EDGERT_GUARD_END(error, nullptr)
}

void edgert_trt_engine_destroy(edgert_trt_engine* engine) { delete engine; }

int32_t edgert_trt_engine_tensor_count(const edgert_trt_engine* engine) { return engine->engine->getNbIOTensors(); }

int edgert_trt_engine_tensor(const edgert_trt_engine* engine, int32_t index, edgert_trt_tensor* tensor,
                             edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    const ICudaEngine& e = *engine->engine;
    if (index < 0 || index >= e.getNbIOTensors()) {
        fail(error, "tensor index " + std::to_string(index) + " is out of range");
        return 1;
    }
    const char* name = e.getIOTensorName(index);
    Dims dims = e.getTensorShape(name);
    if (dims.nbDims < 0 || dims.nbDims > EDGERT_TRT_MAX_DIMS) {
        fail(error, std::string("tensor ") + name + " has " + std::to_string(dims.nbDims) + " dimensions");
        return 1;
    }
    tensor->name = name;
    tensor->is_input = e.getTensorIOMode(name) == TensorIOMode::kINPUT;
    tensor->dtype = edgert_dtype(e.getTensorDataType(name));
    tensor->nb_dims = dims.nbDims;
    for (int32_t i = 0; i < dims.nbDims; ++i) {
        tensor->dims[i] = dims.d[i];
    }
    tensor->linear = e.getTensorFormat(name) == TensorFormat::kLINEAR;
    tensor->format = e.getTensorFormatDesc(name);
    return 0;
    EDGERT_GUARD_END(error, 1)
}

edgert_trt_context* edgert_trt_context_create(edgert_trt_engine* engine, edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    engine->runtime->logger.begin();
    auto context = std::make_unique<edgert_trt_context>();
    context->engine = engine;
    context->context.reset(engine->engine->createExecutionContext());
    if (!context->context) {
        fail(error, "createExecutionContext failed: " + engine->runtime->logger.take("out of device memory?"));
        return nullptr;
    }
    const edgert_trt_symbols& sym = context->sym();
    // Non-blocking: the legacy default stream, where GPU preprocessing may run, does not serialize
    // with it; the input is complete before a run starts (the preprocessing stage synchronizes).
    constexpr unsigned int kNonBlocking = 0x01; // cudaStreamNonBlocking
    int code = sym.cuda_stream_create_with_flags(&context->stream, kNonBlocking);
    for (int i = 0; code == 0 && i < 4; ++i) {
        code = sym.cuda_event_create(&context->events[i]);
    }
    if (code != 0) {
        fail(error, context->cuda_error("creating a CUDA stream and events", code));
        edgert_trt_context_destroy(context.release());
        return nullptr;
    }
    const ICudaEngine& e = *engine->engine;
    for (int32_t i = 0; i < e.getNbIOTensors(); ++i) {
        const char* name = e.getIOTensorName(i);
        DeviceBuffer buffer;
        buffer.name = name;
        buffer.is_input = e.getTensorIOMode(name) == TensorIOMode::kINPUT;
        context->buffers.push_back(buffer);
    }
    return context.release();
    EDGERT_GUARD_END(error, nullptr)
}

void edgert_trt_context_destroy(edgert_trt_context* context) {
    if (context == nullptr) {
        return;
    }
    const edgert_trt_symbols& sym = context->sym();
    for (DeviceBuffer& buffer : context->buffers) {
        if (buffer.device != nullptr) {
            sym.cuda_free(buffer.device);
        }
    }
    for (void* event : context->events) {
        if (event != nullptr) {
            sym.cuda_event_destroy(event);
        }
    }
    if (context->stream != nullptr) {
        sym.cuda_stream_destroy(context->stream);
    }
    delete context;
}

int edgert_trt_context_set_input_shape(edgert_trt_context* context, const char* name, int32_t nb_dims,
                                       const int64_t* dims, edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    if (nb_dims < 0 || nb_dims > EDGERT_TRT_MAX_DIMS) {
        fail(error, "a shape has at most " + std::to_string(EDGERT_TRT_MAX_DIMS) + " dimensions");
        return 1;
    }
    Dims shape = to_dims(nb_dims, dims);
    context->engine->runtime->logger.begin();
    if (!context->context->setInputShape(name, shape)) {
        fail(error, std::string("input ") + name + " cannot take shape " + shape_text(shape) + ": " +
                        context->engine->runtime->logger.take("outside the engine's profile"));
        return 1;
    }
    return 0;
    EDGERT_GUARD_END(error, 1)
}

int edgert_trt_context_tensor_shape(edgert_trt_context* context, const char* name, int32_t* nb_dims,
                                    int64_t* dims, edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    Dims shape = context->context->getTensorShape(name);
    if (shape.nbDims < 0 || shape.nbDims > EDGERT_TRT_MAX_DIMS) {
        fail(error, std::string("tensor ") + name + " has no shape: is it an input or output of this engine?");
        return 1;
    }
    *nb_dims = shape.nbDims;
    for (int32_t i = 0; i < shape.nbDims; ++i) {
        dims[i] = shape.d[i];
    }
    return 0;
    EDGERT_GUARD_END(error, 1)
}

int edgert_trt_context_run(edgert_trt_context* context, const edgert_trt_binding* bindings, int32_t count,
                           edgert_trt_timing* timing, edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    const edgert_trt_symbols& sym = context->sym();
    const ICudaEngine& e = *context->engine->engine;
    context->engine->runtime->logger.begin();
    if (count != static_cast<int32_t>(context->buffers.size())) {
        fail(error, "the engine has " + std::to_string(context->buffers.size()) + " inputs and outputs, " +
                        std::to_string(count) + " were given");
        return 1;
    }
    std::vector<const edgert_trt_binding*> by_buffer(context->buffers.size(), nullptr);
    for (size_t b = 0; b < context->buffers.size(); ++b) {
        DeviceBuffer& buffer = context->buffers[b];
        for (int32_t i = 0; i < count; ++i) {
            if (buffer.name == bindings[i].name) {
                by_buffer[b] = &bindings[i];
            }
        }
        const edgert_trt_binding* binding = by_buffer[b];
        if (binding == nullptr) {
            fail(error, "no buffer was given for tensor " + buffer.name);
            return 1;
        }
        Dims shape = context->context->getTensorShape(buffer.name.c_str());
        size_t expected = dtype_bytes(e.getTensorDataType(buffer.name.c_str()));
        for (int32_t d = 0; d < shape.nbDims; ++d) {
            if (shape.d[d] < 0) {
                fail(error, "tensor " + buffer.name + " has unresolved shape " + shape_text(shape) +
                                ": set every input's shape first");
                return 1;
            }
            expected *= static_cast<size_t>(shape.d[d]);
        }
        if (binding->bytes != expected) {
            fail(error, "tensor " + buffer.name + " " + shape_text(shape) + " needs " + std::to_string(expected) +
                            " bytes, " + std::to_string(binding->bytes) + " were given");
            return 1;
        }
        if (binding->device != nullptr) {
            // Already where the GPU reads or writes it: bound in place, never copied.
            if (!context->context->setTensorAddress(buffer.name.c_str(), binding->device)) {
                fail(error, "setTensorAddress(" + buffer.name + ") failed: " +
                                context->engine->runtime->logger.take("no reason given"));
                return 1;
            }
            continue;
        }
        if (buffer.capacity < expected) {
            if (buffer.device != nullptr) {
                sym.cuda_free(buffer.device);
                buffer.device = nullptr;
                buffer.capacity = 0;
            }
            int code = sym.cuda_malloc(&buffer.device, expected);
            if (code != 0) {
                fail(error, context->cuda_error(("cudaMalloc of " + std::to_string(expected) + " bytes for " +
                                                 buffer.name).c_str(), code));
                return 1;
            }
            buffer.capacity = expected;
        }
        if (!context->context->setTensorAddress(buffer.name.c_str(), buffer.device)) {
            fail(error, "setTensorAddress(" + buffer.name + ") failed: " +
                            context->engine->runtime->logger.take("no reason given"));
            return 1;
        }
    }
    void* stream = context->stream;
    void** events = context->events;
    int code = sym.cuda_event_record(events[0], stream);
    for (size_t b = 0; code == 0 && b < context->buffers.size(); ++b) {
        if (context->buffers[b].is_input && by_buffer[b]->device == nullptr) {
            code = sym.cuda_memcpy_async(context->buffers[b].device, by_buffer[b]->host, by_buffer[b]->bytes,
                                         kHostToDevice, stream);
        }
    }
    if (code == 0) {
        code = sym.cuda_event_record(events[1], stream);
    }
    if (code != 0) {
        fail(error, context->cuda_error("copying the inputs to the GPU", code));
        return 1;
    }
    auto enqueue_start = std::chrono::steady_clock::now();
    bool enqueued = context->context->enqueueV3(static_cast<cudaStream_t>(stream));
    auto enqueue_end = std::chrono::steady_clock::now();
    if (!enqueued) {
        sym.cuda_stream_synchronize(stream);
        fail(error, "enqueueV3 failed: " + context->engine->runtime->logger.take("no reason given"));
        return 1;
    }
    code = sym.cuda_event_record(events[2], stream);
    for (size_t b = 0; code == 0 && b < context->buffers.size(); ++b) {
        if (!context->buffers[b].is_input && by_buffer[b]->device == nullptr) {
            code = sym.cuda_memcpy_async(by_buffer[b]->host, context->buffers[b].device, by_buffer[b]->bytes,
                                         kDeviceToHost, stream);
        }
    }
    if (code == 0) {
        code = sym.cuda_event_record(events[3], stream);
    }
    if (code == 0) {
        code = sym.cuda_stream_synchronize(stream);
    }
    if (code != 0) {
        fail(error, context->cuda_error("running the engine and copying its outputs back", code));
        return 1;
    }
    float* slots[3] = {&timing->h2d_ms, &timing->compute_ms, &timing->d2h_ms};
    for (int i = 0; i < 3; ++i) {
        code = sym.cuda_event_elapsed_time(slots[i], events[i], events[i + 1]);
        if (code != 0) {
            fail(error, context->cuda_error("cudaEventElapsedTime", code));
            return 1;
        }
    }
    timing->enqueue_ms = std::chrono::duration<float, std::milli>(enqueue_end - enqueue_start).count();
    return 0;
    EDGERT_GUARD_END(error, 1)
}

int edgert_trt_build(edgert_trt_runtime* runtime, const void* onnx, size_t bytes,
                     const edgert_trt_build_options* options, edgert_trt_blob* plan,
                     edgert_trt_blob* timing_cache_out, edgert_trt_build_report* report,
                     edgert_trt_error* error) {
    EDGERT_GUARD_BEGIN
    const edgert_trt_symbols& sym = runtime->sym;
    Logger& logger = runtime->logger;
    logger.begin();
    if (sym.create_infer_builder == nullptr || sym.create_onnx_parser == nullptr) {
        fail(error, "building engines needs libnvonnxparser, which was not found");
        return 1;
    }
    Owned<IBuilder> builder(static_cast<IBuilder*>(sym.create_infer_builder(&logger, NV_TENSORRT_VERSION)));
    if (!builder) {
        fail(error, "createInferBuilder failed: " + logger.take("no reason given"));
        return 1;
    }
#if NV_TENSORRT_MAJOR < 10
    const uint32_t flags = 1U << static_cast<uint32_t>(NetworkDefinitionCreationFlag::kEXPLICIT_BATCH);
#else
    const uint32_t flags = 0; // explicit batch is the only mode from TensorRT 10
#endif
    Owned<INetworkDefinition> network(builder->createNetworkV2(flags));
    Owned<IBuilderConfig> config(builder->createBuilderConfig());
    Owned<nvonnxparser::IParser> parser(
        static_cast<nvonnxparser::IParser*>(sym.create_onnx_parser(network.get(), &logger, NV_ONNX_PARSER_VERSION)));
    if (!network || !config || !parser) {
        fail(error, "creating the network, config or ONNX parser failed: " + logger.take("no reason given"));
        return 1;
    }
    // With the model's path the parser finds external weights beside it, wherever edgert runs.
    if (!parser->parse(onnx, bytes, options->model_path)) {
        std::string reasons;
        for (int32_t i = 0; i < parser->getNbErrors(); ++i) {
            reasons += (i ? "; " : "") + std::string(parser->getError(i)->desc());
        }
        fail(error, "the ONNX parser refused the model: " + reasons);
        return 1;
    }
    bool quantized = has_qdq(*network);
    if (options->int8 && options->calibrator == nullptr && !quantized) {
        // TensorRT would stop with "Calibration failure occurred with no scaling factors detected".
        fail(error, "INT8 needs scales: the model has no Q/DQ nodes and no calibration set was given");
        return 1;
    }
#if NV_TENSORRT_MAJOR < 11
    if (quantized && !options->int8 && !options->fp8) {
        fail(error, "the model has Q/DQ nodes, which TensorRT builds only with INT8 (or, for FP8 ones, FP8) enabled");
        return 1;
    }
#endif
    if (options->dla_core >= 0) {
        int32_t cores = builder->getNbDLACores();
        if (options->dla_core >= cores) {
            fail(error, "DLA core " + std::to_string(options->dla_core) + " does not exist: this device has " +
                            std::to_string(cores) + " DLA cores");
            return 1;
        }
#if NV_TENSORRT_MAJOR < 11
        if (!options->fp16 && !options->int8) {
            fail(error, "DLA runs FP16 and INT8 only: build with fp16 or int8");
            return 1;
        }
#endif
    }
#if NV_TENSORRT_MAJOR >= 11
    // TensorRT 11 builds strongly typed networks: precision comes from the model itself.
    if (options->fp16 || options->int8 || options->fp8) {
        fail(error, "TensorRT 11 has no FP16/INT8/FP8 builder flags: it builds the types the model has");
        return 1;
    }
#else
    if (options->fp16) {
        config->setFlag(BuilderFlag::kFP16);
    }
    if (options->int8) {
        config->setFlag(BuilderFlag::kINT8);
    }
    if (options->fp8) {
#if NV_TENSORRT_MAJOR >= 10
        config->setFlag(BuilderFlag::kFP8);
#else
        // 8.6 declares the flag and says it is not supported.
        fail(error, "TensorRT 8 has no FP8 kernels");
        return 1;
#endif
    }
#endif
#if NV_TENSORRT_MAJOR >= 11
    if (options->calibrator != nullptr) {
        fail(error, "TensorRT 11 has no INT8 calibrator: quantize the model with Q/DQ nodes");
        return 1;
    }
#endif
    if (options->sparsity) {
        config->setFlag(BuilderFlag::kSPARSE_WEIGHTS);
    }
    if (options->dla_core >= 0) {
        config->setDefaultDeviceType(DeviceType::kDLA);
        config->setDLACore(options->dla_core);
        config->setFlag(BuilderFlag::kGPU_FALLBACK);
    }
    // With GPU fallback a build succeeds even when no layer can run on the DLA: say how many can.
    report->layers = network->getNbLayers();
    report->dla_layers = 0;
    for (int32_t i = 0; options->dla_core >= 0 && i < network->getNbLayers(); ++i) {
        report->dla_layers += config->canRunOnDLA(network->getLayer(i)) ? 1 : 0;
    }
    if (options->workspace_bytes > 0) {
        config->setMemoryPoolLimit(MemoryPoolType::kWORKSPACE, static_cast<size_t>(options->workspace_bytes));
    }
    // A cache from another release or GPU is refused with an error logged (and, by some releases,
    // a null cache): the caller builds again without it rather than failing the build.
    logger.begin();
    Owned<ITimingCache> timing_cache(config->createTimingCache(options->timing_cache, options->timing_cache_bytes));
    bool refused = !timing_cache || !config->setTimingCache(*timing_cache, false);
    std::string reason = logger.take("");
    if (options->timing_cache_bytes > 0 && (refused || !reason.empty())) {
        fail(error, "TensorRT refused the timing cache: " +
                        (reason.empty() ? std::string("corrupt, or from another TensorRT release or GPU") : reason));
        return EDGERT_TRT_TIMING_CACHE_REFUSED;
    }
    if (refused) {
        fail(error, "creating an empty timing cache failed: " + (reason.empty() ? std::string("no reason given") : reason));
        return 1;
    }
    IOptimizationProfile* profile = nullptr;
    for (int32_t i = 0; i < network->getNbInputs(); ++i) {
        ITensor* input = network->getInput(i);
        Dims dims = input->getDimensions();
        bool dynamic = false;
        for (int32_t d = 0; d < dims.nbDims; ++d) {
            dynamic = dynamic || dims.d[d] < 0;
        }
        if (!dynamic) {
            continue;
        }
        if (options->profile_nb_dims != dims.nbDims) {
            fail(error, std::string("input ") + input->getName() + " has dynamic shape " + shape_text(dims) +
                            ": give a shape profile with " + std::to_string(dims.nbDims) + " dimensions");
            return 1;
        }
        if (profile == nullptr) {
            profile = builder->createOptimizationProfile();
        }
        const int64_t* shapes[3] = {options->profile_min, options->profile_opt, options->profile_max};
        const OptProfileSelector selectors[3] = {OptProfileSelector::kMIN, OptProfileSelector::kOPT,
                                                 OptProfileSelector::kMAX};
        for (int s = 0; s < 3; ++s) {
            if (!profile->setDimensions(input->getName(), selectors[s], to_dims(dims.nbDims, shapes[s]))) {
                fail(error, std::string("the shape profile does not fit input ") + input->getName() + " " +
                                shape_text(dims) + ": " + logger.take("wrong rank or fixed dimension changed"));
                return 1;
            }
        }
    }
    if (profile != nullptr && config->addOptimizationProfile(profile) < 0) {
        fail(error, "the shape profile was refused: " + logger.take("min <= opt <= max must hold"));
        return 1;
    }
#if NV_TENSORRT_MAJOR < 11
    std::unique_ptr<Calibrator> calibrator;
    if (options->calibrator != nullptr) {
        if (!options->int8) {
            fail(error, "a calibrator needs INT8 precision");
            return 1;
        }
        std::vector<Calibrator::Input> inputs;
        for (int32_t i = 0; i < network->getNbInputs(); ++i) {
            ITensor* input = network->getInput(i);
            if (input->getType() != DataType::kFLOAT) {
                fail(error, std::string("input ") + input->getName() + " is not f32: calibration feeds f32 batches");
                return 1;
            }
            // A dynamic input is calibrated at the profile's optimum shape.
            Dims dims = input->getDimensions();
            size_t bytes = sizeof(float);
            for (int32_t d = 0; d < dims.nbDims; ++d) {
                int64_t extent = dims.d[d] >= 0 ? dims.d[d] : options->profile_opt[d];
                bytes *= static_cast<size_t>(extent);
            }
            Calibrator::Input entry;
            entry.name = input->getName();
            entry.bytes = bytes;
            entry.host.resize(bytes);
            inputs.push_back(std::move(entry));
        }
        calibrator = std::make_unique<Calibrator>(sym, *options->calibrator, std::move(inputs));
        config->setInt8Calibrator(calibrator.get());
        if (profile != nullptr && !config->setCalibrationProfile(profile)) {
            fail(error, "the calibration profile was refused: " + logger.take("no reason given"));
            return 1;
        }
    }
#endif
    Owned<IHostMemory> serialized(builder->buildSerializedNetwork(*network, *config));
#if NV_TENSORRT_MAJOR < 11
    if (calibrator && calibrator->failed()) {
        const std::string& reason = calibrator->reason();
        fail(error, "calibration stopped: " + (reason.empty() ? std::string("the calibration set failed") : reason));
        return 1;
    }
#endif
    if (!serialized) {
        fail(error, "building the engine failed: " + logger.take("no reason given"));
        return 1;
    }
    plan->bytes = serialized->size();
    plan->data = std::malloc(plan->bytes);
    if (plan->data == nullptr) {
        fail(error, "out of host memory for the engine");
        return 1;
    }
    std::memcpy(plan->data, serialized->data(), plan->bytes);
    if (timing_cache_out != nullptr) {
        Owned<IHostMemory> cache(config->getTimingCache()->serialize());
        timing_cache_out->data = nullptr;
        timing_cache_out->bytes = 0;
        if (cache) {
            timing_cache_out->data = std::malloc(cache->size());
            if (timing_cache_out->data != nullptr) {
                std::memcpy(timing_cache_out->data, cache->data(), cache->size());
                timing_cache_out->bytes = cache->size();
            }
        }
    }
    return 0;
    EDGERT_GUARD_END(error, 1)
}

void edgert_trt_blob_free(edgert_trt_blob* blob) {
    std::free(blob->data);
    blob->data = nullptr;
    blob->bytes = 0;
}

} // extern "C"
