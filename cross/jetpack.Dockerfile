# A cross image with JetPack's aarch64 CUDA and TensorRT libraries and headers, for building the GPU
# features with `cross` (see cross/README.md). The packages come from NVIDIA's Jetson apt repository
# and are unpacked into /opt/jetpack, not installed: their dependencies are the board's, not the
# image's. Variants by build argument: cross/jetpack5.toml (L4T r35.4, CUDA 11.4, TensorRT 8.5) and
# cross/jetpack6.toml (L4T r36.4, CUDA 12.6, TensorRT 10.3).
# The base has the aarch64 linker and a glibc (2.31) older than every supported JetPack's.
FROM ghcr.io/cross-rs/aarch64-unknown-linux-gnu:0.2.5

ARG L4T=r35.4
ARG CUDA=11-4
ARG PACKAGES="cuda-cudart-11-4 cuda-cudart-dev-11-4 cuda-driver-dev-11-4 cuda-nvrtc-11-4 cuda-nvrtc-dev-11-4 libnvinfer8 libnvinfer-dev libnvonnxparsers8 libnvonnxparsers-dev"

RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates curl gnupg; \
    dpkg --add-architecture arm64; \
    sed -i 's/^deb /deb [arch=amd64] /' /etc/apt/sources.list; \
    curl -fsSL https://repo.download.nvidia.com/jetson/jetson-ota-public.asc \
      | gpg --dearmor -o /usr/share/keyrings/nvidia-jetson.gpg; \
    for component in common t234; do \
      echo "deb [arch=arm64 signed-by=/usr/share/keyrings/nvidia-jetson.gpg] https://repo.download.nvidia.com/jetson/${component} ${L4T} main" \
        >> /etc/apt/sources.list.d/nvidia-jetson.list; \
    done; \
    apt-get update; \
    mkdir -p /tmp/debs /opt/jetpack; \
    cd /tmp/debs; \
    for package in ${PACKAGES}; do apt-get download "${package}:arm64"; done; \
    for deb in *.deb; do dpkg-deb -x "$deb" /opt/jetpack; done; \
    # The packages install /usr/local/cuda-X.Y; the /usr/local/cuda link comes from a postinst script
    # that unpacking does not run.
    ln -sfn "$(ls -d /opt/jetpack/usr/local/cuda-*.* | head -n 1)" /opt/jetpack/usr/local/cuda; \
    rm -rf /tmp/debs /var/lib/apt/lists/*

# Where the GPU features' build scripts look for CUDA and TensorRT (runtime/build.rs).
ENV CUDA_PATH=/opt/jetpack/usr/local/cuda \
    CUDA_INCLUDE_DIR=/opt/jetpack/usr/local/cuda/targets/aarch64-linux/include:/opt/jetpack/usr/local/cuda/include \
    TENSORRT_INCLUDE_DIR=/opt/jetpack/usr/include/aarch64-linux-gnu \
    TENSORRT_LIB_DIR=/opt/jetpack/usr/lib/aarch64-linux-gnu
