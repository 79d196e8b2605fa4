// Checks the parts of the shim that need no TensorRT, so they run wherever a C++ compiler does:
// the logger (logger.h, against a stand-in for TensorRT's ILogger) and the version rule
// (version.h). `edgert_trt_shim_check` returns 0, or the number of the first check that failed.
// Called by a Rust test (`ffi.rs`).

#include <string>
#include <thread>

namespace nvinfer1 {
// The part of NvInferRuntimeBase.h's ILogger the logger uses, in TensorRT's order of severity.
class ILogger {
public:
    enum class Severity : int { kINTERNAL_ERROR = 0, kERROR = 1, kWARNING = 2, kINFO = 3, kVERBOSE = 4 };
    virtual void log(Severity severity, const char* message) noexcept = 0;
    virtual ~ILogger() = default;
};
} // namespace nvinfer1

#include "logger.h"
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

} // namespace

extern "C" int edgert_trt_shim_check(void) {
    int failed = logger_checks();
    return failed != 0 ? failed : version_checks();
}
