// The shim's TensorRT logger, in a header of its own so that `logger_test.cpp` can check it
// against a stand-in for TensorRT's ILogger. Include after NvInfer.h (or the stand-in).
#ifndef EDGERT_TRT_LOGGER_H
#define EDGERT_TRT_LOGGER_H

#include <cstdio>
#include <cstring>
#include <string>

namespace edgert {

// Says why a call returned null or false: the first error TensorRT logged during that call (the
// root cause: "Version tag does not match" comes before "deserialization failed"). Each shim call
// starts with `begin`, so an error of an earlier call never attaches to a later one. Kept per
// thread: sessions on several threads share one runtime, and TensorRT logs on the calling thread.
// TensorRT 8.x logs an out-of-memory error for each tactic too large for the free memory and then
// skips that tactic: such an error is the reason only when no other error was logged.
class Logger : public nvinfer1::ILogger {
public:
    void log(Severity severity, const char* message) noexcept override {
        if (severity <= Severity::kWARNING) {
            std::fprintf(stderr, "TensorRT: %s\n", message);
        }
        if (severity == Severity::kERROR || severity == Severity::kINTERNAL_ERROR) {
            try {
                std::string& slot = out_of_memory(message) ? first_out_of_memory() : first();
                if (slot.empty()) {
                    slot = message;
                }
            } catch (...) {
                // Out of memory while keeping the message: it was printed above.
            }
        }
    }
    void begin() {
        first().clear();
        first_out_of_memory().clear();
    }
    std::string take(const char* fallback) {
        std::string message = !first().empty() ? first() : !first_out_of_memory().empty() ? first_out_of_memory() : fallback;
        begin();
        return message;
    }

private:
    static bool out_of_memory(const char* message) {
        return std::strstr(message, "out of memory") != nullptr || std::strstr(message, "OutOfMemory") != nullptr;
    }
    static std::string& first() {
        thread_local std::string message;
        return message;
    }
    static std::string& first_out_of_memory() {
        thread_local std::string message;
        return message;
    }
};

} // namespace edgert

#endif
