// The fused preprocessing pass on the GPU: the same arithmetic as preprocess/fused.rs, one thread per
// output pixel. Each thread reads its column's and row's taps (planned on the host, shared with the
// CPU pass), converts the four source pixels to RGB (BT.601 limited range for YUV), interpolates,
// applies gain and bias, and writes the model's channel order and layout, as f32 or f16.
// Compiled at run time by NVRTC: no CUDA headers, no nvcc.

enum Format { YUYV = 0, NV12 = 1, GREY = 2, RGB24 = 3, BGR24 = 4 };
enum Order { RGB = 0, BGR = 1, GRAY = 2 };
enum Layout { NCHW = 0, NHWC = 1 };

// Where an output column (or row) samples the source: preprocess::fused::Tap.
struct Tap {
    int i0;
    int i1;
    float w1;
    int inside;
};

struct Params {
    const unsigned char* frame;
    int stride;
    int frame_height;
    int format;
    const Tap* columns;
    const Tap* rows;
    int width;
    int height;
    int order;
    int layout;
    float gain[3];
    float bias[3];
    float pad;
};

__device__ float clamp255(float v) { return fminf(fmaxf(v, 0.0f), 255.0f); }

__device__ void yuv_to_rgb(float y, float u, float v, float* rgb) {
    y = 1.164f * (y - 16.0f);
    u -= 128.0f;
    v -= 128.0f;
    rgb[0] = clamp255(y + 1.596f * v);
    rgb[1] = clamp255(y - 0.813f * v - 0.391f * u);
    rgb[2] = clamp255(y + 2.018f * u);
}

__device__ void pixel(const Params& p, int x, int y, float* rgb) {
    const unsigned char* row = p.frame + (long long)y * p.stride;
    switch (p.format) {
    case YUYV: {
        const unsigned char* pair = row + (x / 2) * 4;
        yuv_to_rgb(pair[(x % 2) * 2], pair[1], pair[3], rgb);
        break;
    }
    case NV12: {
        const unsigned char* uv = p.frame + (long long)p.frame_height * p.stride + (long long)(y / 2) * p.stride + (x / 2) * 2;
        yuv_to_rgb(row[x], uv[0], uv[1], rgb);
        break;
    }
    case GREY:
        rgb[0] = rgb[1] = rgb[2] = row[x];
        break;
    case RGB24:
        rgb[0] = row[3 * x];
        rgb[1] = row[3 * x + 1];
        rgb[2] = row[3 * x + 2];
        break;
    default: // BGR24
        rgb[0] = row[3 * x + 2];
        rgb[1] = row[3 * x + 1];
        rgb[2] = row[3 * x];
        break;
    }
}

// The model-ordered values of output pixel (x, y), 0..255 before gain and bias.
__device__ void sample(const Params& p, int x, int y, float* out) {
    const Tap cx = p.columns[x];
    const Tap cy = p.rows[y];
    float rgb[3];
    if (!cx.inside || !cy.inside) {
        rgb[0] = rgb[1] = rgb[2] = p.pad;
    } else {
        float a[3], b[3], c[3], d[3];
        pixel(p, cx.i0, cy.i0, a);
        pixel(p, cx.i1, cy.i0, b);
        pixel(p, cx.i0, cy.i1, c);
        pixel(p, cx.i1, cy.i1, d);
        for (int k = 0; k < 3; ++k) {
            float top = a[k] * (1.0f - cx.w1) + b[k] * cx.w1;
            float bottom = c[k] * (1.0f - cx.w1) + d[k] * cx.w1;
            rgb[k] = top * (1.0f - cy.w1) + bottom * cy.w1;
        }
    }
    switch (p.order) {
    case RGB: out[0] = rgb[0]; out[1] = rgb[1]; out[2] = rgb[2]; break;
    case BGR: out[0] = rgb[2]; out[1] = rgb[1]; out[2] = rgb[0]; break;
    default: out[0] = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]; break;
    }
}

__device__ unsigned short to_half(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

template <typename Store>
__device__ void fused(const Params& p, Store store) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) {
        return;
    }
    float values[3];
    sample(p, x, y, values);
    int channels = p.order == GRAY ? 1 : 3;
    long long plane = (long long)p.width * p.height;
    long long i = (long long)y * p.width + x;
    for (int c = 0; c < channels; ++c) {
        float v = values[c] * p.gain[c] + p.bias[c];
        store(p.layout == NCHW ? c * plane + i : i * channels + c, v);
    }
}

extern "C" __global__ void edgert_fused_f32(const Params p, float* out) {
    fused(p, [out](long long at, float v) { out[at] = v; });
}

extern "C" __global__ void edgert_fused_f16(const Params p, unsigned short* out) {
    fused(p, [out](long long at, float v) { out[at] = to_half(v); });
}
