// TensorRT's release numbers, and whether a library can serve a shim built against given headers;
// in a header of its own so that `shim_check.cpp` checks it without TensorRT.
#ifndef EDGERT_TRT_VERSION_H
#define EDGERT_TRT_VERSION_H

#include <cstdint>
#include <string>

namespace edgert {

// getInferLibVersion(): MAJ*1000+MIN*100+PATCH up to TensorRT 9, MAJ*10000+MIN*100+PATCH from 10.
inline int32_t library_major(int32_t version) {
    return version >= 100000 ? version / 10000 : version / 1000;
}

inline int32_t library_minor(int32_t version) {
    return version >= 100000 ? (version / 100) % 100 : (version / 100) % 10;
}

inline std::string version_text(int32_t version) {
    return std::to_string(library_major(version)) + "." + std::to_string(library_minor(version)) + "." +
           std::to_string(version % 100);
}

// Why libnvinfer `version` cannot serve a shim built against TensorRT `major`.`minor` headers, or
// empty. Every virtual function the headers declare must be in the library: the same major, and
// a minor at least the headers' (a shim built with 10.13's headers would call past 10.3's tables).
inline std::string header_mismatch(int32_t version, int32_t major, int32_t minor) {
    if (library_major(version) == major && library_minor(version) >= minor) {
        return "";
    }
    std::string headers = std::to_string(major) + "." + std::to_string(minor);
    std::string fix = library_major(version) == major
                          ? "install TensorRT " + headers + " or later, or rebuild edgert with the board's TensorRT headers"
                          : "rebuild edgert with the board's TensorRT headers";
    return "libnvinfer is TensorRT " + version_text(version) + " but this edgert was built against TensorRT " +
           headers + " headers: " + fix;
}

} // namespace edgert

#endif
