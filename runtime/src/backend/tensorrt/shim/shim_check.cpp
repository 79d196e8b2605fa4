// Checks the parts of the shim that need no TensorRT, so they run wherever a C++ compiler does:
// the logger (logger.h, against a stand-in for TensorRT's ILogger), plugin registration
// (plugins.h), the version rule (version.h) and the INT8 calibrator (calibrator.h, against a stand-in for TensorRT's calibrator interface
// and a fake CUDA runtime). `edgert_trt_shim_check` returns 0, or the number of the first check that failed.
// Called by a Rust test (`ffi.rs`).

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "edgert_trt.h"

namespace nvinfer1 {
// The part of NvInferRuntimeBase.h's ILogger the logger uses, in TensorRT's order of severity.
class ILogger {
public:
    enum class Severity : int { kINTERNAL_ERROR = 0, kERROR = 1, kWARNING = 2, kINFO = 3, kVERBOSE = 4 };
    virtual void log(Severity severity, const char* message) noexcept = 0;
    virtual ~ILogger() = default;
};
// The calls TensorRT's builder makes of an entropy calibrator (NvInfer.h, 8.5 to 10).
class IInt8EntropyCalibrator2 {
public:
    virtual int32_t getBatchSize() const noexcept = 0;
    virtual bool getBatch(void* bindings[], const char* names[], int32_t nbBindings) noexcept = 0;
    virtual const void* readCalibrationCache(std::size_t& length) noexcept = 0;
    virtual void writeCalibrationCache(const void* ptr, std::size_t length) noexcept = 0;
    virtual ~IInt8EntropyCalibrator2() noexcept = default;
};
} // namespace nvinfer1

#include "calibrator.h"
#include "logger.h"
#include "plugins.h"
#include "version.h"

namespace {

int logger_checks() {
    using Severity = nvinfer1::ILogger::Severity;
    edgert::Logger logger;
    // A call's first error is its root cause; the errors after it are consequences.
    logger.begin();
    logger.log(Severity::kERROR, "Version tag does not match");
    logger.log(Severity::kINTERNAL_ERROR, "Engine deserialization failed");
    if (logger.take("none") != "Version tag does not match") {
        return 1;
    }
    // Taken once: the next call's failure without a logged error gets the fallback.
    if (logger.take("none") != "none") {
        return 2;
    }
    // An error left over from an earlier call (one that succeeded anyway) is not this call's.
    logger.log(Severity::kERROR, "stale");
    logger.begin();
    if (logger.take("none") != "none") {
        return 3;
    }
    // Warnings and information are no reason for a failure.
    logger.begin();
    logger.log(Severity::kWARNING, "a warning");
    logger.log(Severity::kINFO, "some information");
    if (logger.take("none") != "none") {
        return 4;
    }
    // Another thread's error is not this thread's.
    logger.begin();
    std::thread other([&logger] {
        logger.begin();
        logger.log(Severity::kERROR, "the other thread's");
    });
    other.join();
    if (logger.take("none") != "none") {
        return 5;
    }
    // TensorRT 8.x's skipped tactics log out-of-memory errors before the real failure.
    logger.begin();
    logger.log(Severity::kERROR, "1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)");
    logger.log(Severity::kERROR, "2: [virtualMemoryBuffer.cpp::resizePhysical] Error Code 2: OutOfMemory");
    logger.log(Severity::kERROR, "4: [network.cpp::validate] Error Code 4: Internal Error (no implementation)");
    if (logger.take("none") != "4: [network.cpp::validate] Error Code 4: Internal Error (no implementation)") {
        return 6;
    }
    // Where running out of memory is all that went wrong, it is the reason.
    logger.begin();
    logger.log(Severity::kERROR, "Error Code 1: Cuda Runtime (out of memory)");
    logger.log(Severity::kERROR, "Error Code 2: OutOfMemory");
    if (logger.take("none") != "Error Code 1: Cuda Runtime (out of memory)" || logger.take("none") != "none") {
        return 7;
    }
    return 0;
}

// A stand-in for initLibNvInferPlugins: counts its calls and keeps the logger it was given.
int plugin_inits = 0;
void* plugin_logger_given = nullptr;
bool fake_init_plugins(void* logger, const char*) {
    ++plugin_inits;
    plugin_logger_given = logger;
    return true;
}

int plugin_checks() {
    // Asked by two runtimes: registered once, with the process's logger, which no runtime frees.
    std::string reason;
    bool first = edgert::init_plugins_once(fake_init_plugins, reason);
    bool second = edgert::init_plugins_once(fake_init_plugins, reason);
    if (!first || !second || plugin_inits != 1) {
        return 41;
    }
    if (plugin_logger_given != static_cast<nvinfer1::ILogger*>(&edgert::plugin_logger())) {
        return 42;
    }
    return 0;
}

int version_checks() {
    using edgert::header_mismatch;
    // 10.13's headers on 10.3's library: refused, with the fix; 10.3's headers on 10.13: served.
    std::string older = header_mismatch(100300, 10, 13);
    if (older.find("libnvinfer is TensorRT 10.3.0 but this edgert was built against TensorRT 10.13 headers") ==
            std::string::npos ||
        older.find("install TensorRT 10.13 or later") == std::string::npos) {
        return 11;
    }
    if (!header_mismatch(101300, 10, 3).empty() || !header_mismatch(100300, 10, 3).empty()) {
        return 12;
    }
    // JetPack 5's 8.5.2 against 8.6 headers, and any other major: refused.
    if (header_mismatch(8502, 8, 6).empty() || !header_mismatch(8602, 8, 5).empty()) {
        return 13;
    }
    if (header_mismatch(8602, 10, 3).find("rebuild edgert with the board's TensorRT headers") == std::string::npos) {
        return 14;
    }
    return 0;
}

// A fake CUDA runtime: "device" memory is host memory, and allocations can be made to fail.
int mallocs_left = 0;
int fake_malloc(void** pointer, size_t bytes) {
    if (mallocs_left-- <= 0) {
        return 2; // cudaErrorMemoryAllocation
    }
    *pointer = new unsigned char[bytes];
    return 0;
}
int fake_free(void* pointer) {
    delete[] static_cast<unsigned char*>(pointer);
    return 0;
}
int fake_copy(void* to, const void* from, size_t bytes, int kind, void*) {
    if (kind != 1) {
        return 1;
    }
    std::memcpy(to, from, bytes);
    return 0;
}
int fake_sync(void*) { return 0; }
const char* fake_error(int) { return "out of memory"; }

// The caller's side: `batches` batches of 4 floats valued 1, 2, ...; -1 after `fail_at` batches.
struct Source {
    int batches = 0;
    int fail_at = -1;
    int given = 0;
    std::string cache;
};
int32_t next_batch(void* user, const char*, void* host, size_t bytes) {
    Source& source = *static_cast<Source*>(user);
    if (source.given == source.fail_at) {
        return -1;
    }
    if (source.given == source.batches) {
        return 0;
    }
    ++source.given;
    float* values = static_cast<float*>(host);
    for (size_t i = 0; i < bytes / sizeof(float); ++i) {
        values[i] = static_cast<float>(source.given);
    }
    return 1;
}
void write_cache(void* user, const void* data, size_t bytes) {
    static_cast<Source*>(user)->cache.assign(static_cast<const char*>(data), bytes);
}

edgert::Calibrator calibrator(Source& source, const edgert_trt_symbols& sym, const void* cache, size_t bytes) {
    edgert_trt_calibrator raw{&source, next_batch, cache, bytes, write_cache};
    edgert::Calibrator::Input input;
    input.name = "input";
    input.bytes = 4 * sizeof(float);
    input.host.resize(input.bytes);
    std::vector<edgert::Calibrator::Input> inputs;
    inputs.push_back(std::move(input));
    return edgert::Calibrator(sym, raw, std::move(inputs));
}

int calibrator_checks() {
    edgert_trt_symbols sym{};
    sym.cuda_malloc = fake_malloc;
    sym.cuda_free = fake_free;
    sym.cuda_memcpy_async = fake_copy;
    sym.cuda_stream_synchronize = fake_sync;
    sym.cuda_get_error_string = fake_error;
    void* bindings[1] = {nullptr};
    const char* names[1] = {"input"};
    {
        // Explicit batch: the batch is in the input's shape, and the builder is told 1.
        Source source;
        source.batches = 2;
        mallocs_left = 1;
        edgert::Calibrator c = calibrator(source, sym, nullptr, 0);
        if (c.getBatchSize() != 1) {
            return 21;
        }
        // Two batches reach the device buffer, then the end of the set, which is no failure.
        for (float expected : {1.0f, 2.0f}) {
            if (!c.getBatch(bindings, names, 1) || static_cast<float*>(bindings[0])[3] != expected) {
                return 22;
            }
        }
        if (c.getBatch(bindings, names, 1) || c.failed()) {
            return 23;
        }
        size_t length = 1;
        if (c.readCalibrationCache(length) != nullptr || length != 0) {
            return 24;
        }
        c.writeCalibrationCache("scales", 6);
        if (source.cache != "scales") {
            return 25;
        }
    }
    {
        // A cache from an earlier build is handed to TensorRT as it is.
        Source source;
        const char cache[] = "cached";
        edgert::Calibrator c = calibrator(source, sym, cache, 6);
        size_t length = 0;
        if (c.readCalibrationCache(length) != cache || length != 6) {
            return 26;
        }
    }
    {
        // The caller's failure, a name that is no input, and an allocation that fails all stop
        // calibration as failed, the last two with a reason.
        Source source;
        source.batches = 3;
        source.fail_at = 1;
        mallocs_left = 1;
        edgert::Calibrator failing = calibrator(source, sym, nullptr, 0);
        if (!failing.getBatch(bindings, names, 1) || failing.getBatch(bindings, names, 1) || !failing.failed()) {
            return 27;
        }
        Source other;
        other.batches = 1;
        edgert::Calibrator wrong = calibrator(other, sym, nullptr, 0);
        const char* unknown[1] = {"labels"};
        if (wrong.getBatch(bindings, unknown, 1) || wrong.reason().find("labels") == std::string::npos) {
            return 28;
        }
        mallocs_left = 0;
        edgert::Calibrator starved = calibrator(other, sym, nullptr, 0);
        if (starved.getBatch(bindings, names, 1) || starved.reason().find("out of memory") == std::string::npos) {
            return 29;
        }
    }
    return 0;
}

} // namespace

extern "C" int edgert_trt_shim_check(void) {
    int failed = logger_checks();
    failed = failed != 0 ? failed : version_checks();
    failed = failed != 0 ? failed : plugin_checks();
    return failed != 0 ? failed : calibrator_checks();
}
