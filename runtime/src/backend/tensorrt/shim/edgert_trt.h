/* edgert's C API over TensorRT: the only boundary between Rust and TensorRT's C++.
 * No C++ type or exception crosses it. Every library symbol (TensorRT's four C entry points, the
 * CUDA runtime's functions) comes in through `edgert_trt_symbols`, resolved by the caller with
 * dlopen, so the binary starts on machines without TensorRT and says so.
 * Mirrored by `ffi.rs`; tests run the Rust side against a mock of this API (`mock.rs`). */
#ifndef EDGERT_TRT_H
#define EDGERT_TRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDGERT_TRT_MAX_DIMS 8

typedef struct edgert_trt_symbols {
    /* libnvinfer */
    void* (*create_infer_runtime)(void* logger, int32_t version);
    void* (*create_infer_builder)(void* logger, int32_t version);
    int32_t (*get_infer_lib_version)(void);
    /* TensorRT 10 and later; NULL before: the build number engines are also tied to */
    int32_t (*get_infer_lib_build_version)(void);
    /* libnvonnxparser of libnvinfer's major; NULL when it is not installed (engines still load,
     * none can be built) */
    void* (*create_onnx_parser)(void* network, void* logger, int32_t version);
    /* libnvinfer_plugin's initLibNvInferPlugins; NULL when it is not installed (engines that use
     * TensorRT's plugins, EfficientNMS_TRT and the like, then fail to load) */
    bool (*init_plugins)(void* logger, const char* plugin_namespace);
    /* libcudart; cudaError_t is returned as int, streams and events as void* */
    int (*cuda_malloc)(void** ptr, size_t bytes);
    int (*cuda_free)(void* ptr);
    int (*cuda_memcpy_async)(void* dst, const void* src, size_t bytes, int kind, void* stream);
    int (*cuda_stream_create_with_flags)(void** stream, unsigned int flags);
    int (*cuda_stream_destroy)(void* stream);
    int (*cuda_stream_synchronize)(void* stream);
    int (*cuda_event_create)(void** event);
    int (*cuda_event_destroy)(void* event);
    int (*cuda_event_record)(void* event, void* stream);
    int (*cuda_event_elapsed_time)(float* ms, void* start, void* end);
    int (*cuda_get_device)(int* device);
    int (*cuda_device_get_attribute)(int* value, int attribute, int device);
    const char* (*cuda_get_error_string)(int error);
    int (*cuda_mem_get_info)(size_t* free_bytes, size_t* total_bytes);
    /* Read by edgert, not the shim, to key built engines by the device and the libraries their
     * tactics came from; each NULL when not found. libcuda: */
    int (*cu_init)(unsigned int flags);
    int (*cu_device_get)(int* device, int ordinal);
    int (*cu_device_get_name)(char* name, int length, int device);
    /* TensorRT 8.x tactics come from cuDNN and cuBLASLt: */
    size_t (*cudnn_get_version)(void);
    size_t (*cublaslt_get_version)(void);
    /* libcudart, called by edgert before TensorRT opens the GPU: how waits are scheduled */
    int (*cuda_set_device_flags)(unsigned int flags);
} edgert_trt_symbols;

/* What a call that fails returns: 1, or, from edgert_trt_build, this when TensorRT refused the
 * timing cache it was given (another TensorRT release or GPU wrote it). */
#define EDGERT_TRT_TIMING_CACHE_REFUSED 2

/* Filled by any call that fails; the message is one line. */
typedef struct edgert_trt_error {
    char message[1024];
} edgert_trt_error;

/* Data types, numbered by edgert (TensorRT's numbers changed between releases). */
enum {
    EDGERT_TRT_F32 = 0,
    EDGERT_TRT_F16 = 1,
    EDGERT_TRT_I8 = 2,
    EDGERT_TRT_I32 = 3,
    EDGERT_TRT_BOOL = 4,
    EDGERT_TRT_U8 = 5,
    EDGERT_TRT_FP8 = 6,
    EDGERT_TRT_BF16 = 7,
    EDGERT_TRT_I64 = 8,
    EDGERT_TRT_OTHER = 99
};

typedef struct edgert_trt_tensor {
    const char* name; /* owned by the engine */
    int32_t is_input;
    int32_t dtype;
    int32_t nb_dims;
    int64_t dims[EDGERT_TRT_MAX_DIMS]; /* -1: dynamic */
    /* 1: linear (dense, row-major); 0: vectorized or channel-last (CHW4, CHW16, HWC8, ...), whose
     * memory is not the dense volume of `dims` */
    int32_t linear;
    /* TensorRT's description of the format, owned by the engine; NULL when it gives none */
    const char* format;
} edgert_trt_tensor;

typedef struct edgert_trt_device {
    int32_t sm_major;
    int32_t sm_minor;
    int32_t integrated; /* 1 on Jetson: CPU and GPU share memory */
    int32_t dla_cores;  /* 1 or 2 on Xavier and Orin AGX/NX; 0 on Orin Nano and other GPUs */
} edgert_trt_device;

/* One input or output of a run: host memory the shim copies from or into, or, when `device` is not
 * NULL, memory the GPU reads or writes in place (a GPU-preprocessed input; on Jetson, mapped host
 * memory): no copy, and `host` is ignored. */
typedef struct edgert_trt_binding {
    const char* name;
    void* host;
    size_t bytes;
    void* device;
} edgert_trt_binding;

/* Per run, as trtexec reports them: CUDA-event times of the copies and the GPU work, and the host
 * time spent inside enqueueV3. */
typedef struct edgert_trt_timing {
    float h2d_ms;
    float compute_ms;
    float d2h_ms;
    float enqueue_ms;
} edgert_trt_timing;

/* Calibrator-based INT8 (TensorRT 8.5 to 10; TensorRT 11 has no calibrator): the builder pulls
 * batches of the network's inputs until `next_batch` returns 0. */
typedef struct edgert_trt_calibrator {
    void* user;
    /* Fills `host` (`bytes` bytes: one f32 batch of input `name`); 1: filled, 0: no more batches,
     * -1: failed (the caller keeps the reason). */
    int32_t (*next_batch)(void* user, const char* name, void* host, size_t bytes);
    /* A calibration cache from an earlier build, used instead of the batches; NULL: none. */
    const void* cache;
    size_t cache_bytes;
    /* Receives the calibration cache TensorRT writes. */
    void (*write_cache)(void* user, const void* data, size_t bytes);
} edgert_trt_calibrator;

/* TensorRT 11 builds strongly typed networks: there, fp16, int8 and fp8 must be 0. */
typedef struct edgert_trt_build_options {
    int32_t fp16;
    int32_t int8;      /* INT8 kernels: scales from the model's Q/DQ nodes or from `calibrator` */
    int32_t sparsity;  /* 2:4 structured-sparse kernels where the weights allow */
    int32_t dla_core;  /* -1: GPU only; else this DLA core, falling back to the GPU per layer;
                        * needs fp16 or int8 (DLA has no FP32) */
    int64_t workspace_bytes; /* 0: TensorRT's default */
    const void* timing_cache;
    size_t timing_cache_bytes;
    /* One optimization profile, for dynamic inputs: every dynamic input gets these shapes. */
    int32_t profile_nb_dims;
    int64_t profile_min[EDGERT_TRT_MAX_DIMS];
    int64_t profile_opt[EDGERT_TRT_MAX_DIMS];
    int64_t profile_max[EDGERT_TRT_MAX_DIMS];
    /* INT8 scales from calibration batches rather than Q/DQ nodes; NULL: none. Needs int8. */
    const edgert_trt_calibrator* calibrator;
    /* The model's absolute path, where the parser finds external weights (`location` relative to
     * the model's folder); NULL: the model has none. */
    const char* model_path;
    /* FP8 kernels, for a model with FP8 Q/DQ nodes (TensorRT 8.6 to 10; 11 takes them from the
     * model's types) */
    int32_t fp8;
} edgert_trt_build_options;

/* Where a build placed the network's layers: how many there are, and how many of them TensorRT
 * places on the DLA core asked for (0 without one; the rest fall back to the GPU). */
typedef struct edgert_trt_build_report {
    int32_t layers;
    int32_t dla_layers;
} edgert_trt_build_report;

/* Bytes the shim allocated; freed with edgert_trt_blob_free. */
typedef struct edgert_trt_blob {
    void* data;
    size_t bytes;
} edgert_trt_blob;

typedef struct edgert_trt_runtime edgert_trt_runtime;
typedef struct edgert_trt_engine edgert_trt_engine;
typedef struct edgert_trt_context edgert_trt_context;

edgert_trt_runtime* edgert_trt_runtime_create(const edgert_trt_symbols* symbols, edgert_trt_error* error);
void edgert_trt_runtime_destroy(edgert_trt_runtime* runtime);
/* getInferLibVersion(): MAJ*1000+MIN*100+PATCH up to TensorRT 9, MAJ*10000+MIN*100+PATCH from 10. */
int32_t edgert_trt_runtime_version(const edgert_trt_runtime* runtime);
int edgert_trt_runtime_device(const edgert_trt_runtime* runtime, edgert_trt_device* device, edgert_trt_error* error);

edgert_trt_engine* edgert_trt_engine_load(edgert_trt_runtime* runtime, const void* plan, size_t bytes,
                                          int32_t dla_core, edgert_trt_error* error);
void edgert_trt_engine_destroy(edgert_trt_engine* engine);
int32_t edgert_trt_engine_tensor_count(const edgert_trt_engine* engine);
int edgert_trt_engine_tensor(const edgert_trt_engine* engine, int32_t index, edgert_trt_tensor* tensor,
                             edgert_trt_error* error);

edgert_trt_context* edgert_trt_context_create(edgert_trt_engine* engine, edgert_trt_error* error);
void edgert_trt_context_destroy(edgert_trt_context* context);
int edgert_trt_context_set_input_shape(edgert_trt_context* context, const char* name, int32_t nb_dims,
                                       const int64_t* dims, edgert_trt_error* error);
/* A tensor's shape once every input shape is set (outputs resolved). */
int edgert_trt_context_tensor_shape(edgert_trt_context* context, const char* name, int32_t* nb_dims,
                                    int64_t* dims, edgert_trt_error* error);
/* Copies the inputs to the device, enqueues, copies the outputs back and waits. */
int edgert_trt_context_run(edgert_trt_context* context, const edgert_trt_binding* bindings, int32_t count,
                           edgert_trt_timing* timing, edgert_trt_error* error);

/* Builds a serialized engine from an ONNX model; `timing_cache_out` may be NULL. Returns 0, 1 or
 * EDGERT_TRT_TIMING_CACHE_REFUSED (nothing built: build again without that cache). */
int edgert_trt_build(edgert_trt_runtime* runtime, const void* onnx, size_t bytes,
                     const edgert_trt_build_options* options, edgert_trt_blob* plan,
                     edgert_trt_blob* timing_cache_out, edgert_trt_build_report* report,
                     edgert_trt_error* error);
void edgert_trt_blob_free(edgert_trt_blob* blob);

#ifdef __cplusplus
}
#endif

#endif
