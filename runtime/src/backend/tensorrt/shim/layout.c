/* Sizes and offsets of edgert_trt.h's structs as the C compiler lays them out, for the test that
 * checks `ffi.rs` mirrors them. Needs no TensorRT header, so it is built wherever the feature is. */
#include "edgert_trt.h"

size_t edgert_trt_layout(size_t* out, size_t capacity) {
    const size_t values[] = {
        sizeof(edgert_trt_symbols),
        offsetof(edgert_trt_symbols, create_onnx_parser),
        offsetof(edgert_trt_symbols, init_plugins),
        offsetof(edgert_trt_symbols, cuda_stream_create_with_flags),
        offsetof(edgert_trt_symbols, cuda_get_error_string),
        offsetof(edgert_trt_symbols, cu_device_get_name),
        offsetof(edgert_trt_symbols, cublaslt_get_version),
        offsetof(edgert_trt_symbols, cuda_set_device_flags),
        sizeof(edgert_trt_error),
        sizeof(edgert_trt_tensor),
        offsetof(edgert_trt_tensor, dims),
        offsetof(edgert_trt_tensor, linear),
        offsetof(edgert_trt_tensor, format),
        sizeof(edgert_trt_device),
        sizeof(edgert_trt_binding),
        offsetof(edgert_trt_binding, device),
        sizeof(edgert_trt_timing),
        sizeof(edgert_trt_build_options),
        offsetof(edgert_trt_build_options, timing_cache),
        offsetof(edgert_trt_build_options, profile_nb_dims),
        offsetof(edgert_trt_build_options, profile_max),
        offsetof(edgert_trt_build_options, calibrator),
        offsetof(edgert_trt_build_options, model_path),
        offsetof(edgert_trt_build_options, fp8),
        sizeof(edgert_trt_calibrator),
        offsetof(edgert_trt_calibrator, next_batch),
        offsetof(edgert_trt_calibrator, write_cache),
        sizeof(edgert_trt_blob),
        sizeof(edgert_trt_build_report),
    };
    size_t count = sizeof(values) / sizeof(values[0]);
    for (size_t i = 0; i < count && i < capacity; ++i) {
        out[i] = values[i];
    }
    return count;
}
