// The shim's INT8 calibrator (TensorRT 8.5 to 10: deprecated by 10.1, removed by 11), in a header
// of its own so that `shim_check.cpp` drives it against a stand-in for TensorRT's calibrator
// interface. Include after NvInfer.h (or the stand-in) and edgert_trt.h.
#ifndef EDGERT_TRT_CALIBRATOR_H
#define EDGERT_TRT_CALIBRATOR_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace edgert {

constexpr int kCalibrationHostToDevice = 1; // cudaMemcpyHostToDevice

// Feeds the builder the caller's batches: each input's batch is filled on the host by
// `next_batch`, then copied into device memory the calibrator owns.
class Calibrator : public nvinfer1::IInt8EntropyCalibrator2 {
public:
    struct Input {
        std::string name;
        size_t bytes = 0;
        std::vector<unsigned char> host;
        void* device = nullptr;
    };

    Calibrator(const edgert_trt_symbols& sym, const edgert_trt_calibrator& source, std::vector<Input> inputs)
        : sym_(sym), source_(source), inputs_(std::move(inputs)) {}
    ~Calibrator() noexcept override {
        for (Input& input : inputs_) {
            if (input.device != nullptr) {
                sym_.cuda_free(input.device);
            }
        }
    }

    // Explicit-batch networks carry the batch in their input shapes: 1, as trtexec says.
    int32_t getBatchSize() const noexcept override { return 1; }

    bool getBatch(void* bindings[], const char* names[], int32_t count) noexcept override {
        try {
            for (int32_t i = 0; i < count; ++i) {
                Input* input = find(names[i]);
                if (input == nullptr) {
                    return stop("the builder asked for a batch of " + std::string(names[i]) + ", not an input");
                }
                int32_t filled = source_.next_batch(source_.user, input->name.c_str(), input->host.data(), input->bytes);
                if (filled != 1) {
                    failed_ = filled < 0;
                    return false;
                }
                if (input->device == nullptr) {
                    int code = sym_.cuda_malloc(&input->device, input->bytes);
                    if (code != 0) {
                        input->device = nullptr;
                        return stop(cuda_text("cudaMalloc for a calibration batch", code));
                    }
                }
                int code = sym_.cuda_memcpy_async(input->device, input->host.data(), input->bytes, kCalibrationHostToDevice, nullptr);
                if (code == 0) {
                    code = sym_.cuda_stream_synchronize(nullptr);
                }
                if (code != 0) {
                    return stop(cuda_text("copying a calibration batch to the GPU", code));
                }
                bindings[i] = input->device;
            }
            return true;
        } catch (...) {
            return stop("out of host memory during calibration");
        }
    }

    const void* readCalibrationCache(size_t& length) noexcept override {
        length = source_.cache != nullptr ? source_.cache_bytes : 0;
        return length > 0 ? source_.cache : nullptr;
    }

    void writeCalibrationCache(const void* data, size_t length) noexcept override {
        source_.write_cache(source_.user, data, length);
    }

    // Why calibration stopped early, or empty: the caller's reason when `next_batch` failed.
    bool failed() const { return failed_; }
    const std::string& reason() const { return reason_; }

private:
    Input* find(const char* name) {
        for (Input& input : inputs_) {
            if (input.name == name) {
                return &input;
            }
        }
        return nullptr;
    }
    bool stop(const std::string& reason) {
        failed_ = true;
        reason_ = reason;
        return false;
    }
    std::string cuda_text(const char* what, int code) const {
        const char* text = sym_.cuda_get_error_string ? sym_.cuda_get_error_string(code) : nullptr;
        return std::string(what) + " failed: " + (text ? text : ("CUDA error " + std::to_string(code)));
    }

    const edgert_trt_symbols& sym_;
    edgert_trt_calibrator source_;
    std::vector<Input> inputs_;
    bool failed_ = false;
    std::string reason_;
};

} // namespace edgert

#endif
