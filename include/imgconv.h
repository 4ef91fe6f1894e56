/*
 * imgconv.h - the core public header of imgconv, a 2D image convolution
 * library with CUDA GPU backends and a fast CPU fallback: images, kernels,
 * contexts, filtering, files. Two companion headers include it:
 * imgconv_gpu_codec.h (JPEG decoded and encoded on the GPU) and
 * imgconv_course.h (1D convolution, stencil and matrix product).
 *
 * Conventions
 *  - Every function that can fail returns an ic_status (IC_OK == 0); getters and
 *    *_free functions, which cannot, say what they return. ic_status_str()
 *    explains a code; ic_last_error() gives the one line saying why the last
 *    failing call on the calling thread failed (the file, the kernel text, the
 *    CUDA call, the limit). No call takes a message buffer. The library never
 *    prints and never exits.
 *  - Whoever creates an object frees it: ic_image_create()/ic_image_free(),
 *    ic_kernel_*()/ic_kernel_free(), ic_context_create()/ic_context_free().
 *  - Sizes are checked for overflow before any allocation.
 *
 * Semantics of ic_convolve() (see docs/definitions.md):
 *   convolution: out(x,y) = bias + sum_{j,i} K(i,j) * in(x - i + cx, y - j + cy)
 *   correlation: out(x,y) = bias + sum_{j,i} K(i,j) * in(x + i - cx, y + j - cy)
 *   with cx = (kw-1)/2, cy = (kh-1)/2, K the coefficients divided by the divisor,
 *   out-of-image coordinates mapped by the border mode, sums accumulated in float32,
 *   and results rounded to nearest (ties to even) then clamped to the sample
 *   type's range: [0, 255] for IC_U8, [0, 65535] for IC_U16; IC_F32 results
 *   are the float32 sums themselves (no rounding, no clamping).
 */
#ifndef IMGCONV_H
#define IMGCONV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IC_VERSION_MAJOR 0
#define IC_VERSION_MINOR 1
#define IC_VERSION_PATCH 0
#define IC_VERSION_STRING "0.1.0"

/* Marks a name kept for one release after a rename (the section "Deprecated
 * names" at the end of this header); define IC_NO_DEPRECATED to hide them. */
#if defined(__GNUC__) || defined(__clang__)
#define IC_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define IC_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define IC_DEPRECATED(msg)
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* Result of every library call. IC_OK is zero; every other value is an error. */
typedef enum ic_status {
    IC_OK = 0,
    IC_ERR_INVALID_ARG, /* a NULL pointer, a negative size, an unknown enum value */
    IC_ERR_NOMEM,       /* an allocation failed */
    IC_ERR_TOO_LARGE,   /* dimensions over a limit, or size arithmetic overflowed */
    IC_ERR_KERNEL,      /* kernel text or kernel file is malformed */
    IC_ERR_IO,          /* a file could not be opened, read or written */
    IC_ERR_FORMAT,      /* a file is corrupt, truncated or of an unknown format */
    IC_ERR_UNSUPPORTED, /* a valid request this build or backend cannot do */
    IC_ERR_NO_BACKEND,  /* the backend is unknown or not usable on this machine */
    IC_ERR_DEVICE,      /* a CUDA call failed (ic_last_error() names it) */
    IC_ERR_INTERNAL     /* a bug: an invariant did not hold */
} ic_status;

/* Returns a short, static, human-readable description of a status code
 * (never NULL; unknown codes give "unknown status"). */
const char *ic_status_str(ic_status status);

/* Errors: one line saying why the last imgconv call that failed on the calling
 * thread failed (it names the file, the kernel text, the CUDA call, the limit),
 * or "" when no call on this thread has failed yet. Every function that
 * returns an ic_status other than IC_OK sets it; the text stays valid until the
 * next imgconv call on the same thread. Never NULL. */
const char *ic_last_error(void);

/* Returns the library version as "MAJOR.MINOR.PATCH" (static string). */
const char *ic_version(void);

/* ------------------------------------------------------------------------ */
/* Images                                                                    */
/* ------------------------------------------------------------------------ */

/* Sample type. IC_U8: one byte per sample, 0..255. IC_U16: two bytes per
 * sample in host byte order, 0..65535 (16-bit PNG, PNM with maxval > 255,
 * TIFF); filtered exactly like IC_U8 (float32 sums, rounded to nearest, ties
 * to even, clamped to the type's range). IC_F32: one IEEE float32 per sample
 * in host byte order, any value (nominally 0..1; float TIFF, PFM); the output
 * is the float32 sum itself, neither rounded nor clamped, and NaN and
 * infinities propagate as IEEE arithmetic says (docs/definitions.md, "Float
 * samples"). src and dst of one call have the same type; `pitch` is always in
 * bytes. */
typedef enum ic_sample_type { IC_U8 = 0, IC_U16 = 1, IC_F32 = 2 } ic_sample_type;

/* Memory layout of the channels.
 *  IC_AOS: interleaved, row y starts at data + y*pitch, sample (x,y,c) at
 *          row[x*channels + c] (the usual RGBRGB...).
 *  IC_SOA: planar, plane c starts at data + c*pitch*height, sample (x,y,c) at
 *          plane[y*pitch + x]. */
typedef enum ic_layout { IC_AOS = 0, IC_SOA = 1 } ic_layout;

/* Where an image's samples live. IC_MEM_HOST (0, what every zeroed or
 * ic_image_create'd image is): ordinary host memory. IC_MEM_DEVICE: `data` is a
 * CUDA device pointer on device `device` (a CuPy/PyTorch tensor, an nvJPEG
 * output, a cudaMallocPitch buffer); see ic_image_wrap_device(). */
typedef enum ic_memory { IC_MEM_HOST = 0, IC_MEM_DEVICE = 1 } ic_memory;

/* A multi-channel image. The struct is public so that callers can wrap their own
 * memory; `pitch` is the distance in bytes between rows and may exceed the row
 * width (padded rows, as returned by cudaMallocPitch). `owner` is nonzero when
 * `data` was allocated by ic_image_create() and must be released by
 * ic_image_free(). */
typedef struct ic_image {
    int width;
    int height;
    int channels; /* 1..4; 2 and 4 have alpha as the last channel */
    ic_layout layout;
    ic_sample_type type;
    size_t pitch; /* bytes from one row to the next, >= row width in bytes */
    uint8_t *data;
    int owner;
    ic_memory memory; /* IC_MEM_HOST, or IC_MEM_DEVICE for a device pointer */
    int device;       /* device images: the CUDA device ordinal that holds data */
    void *stream;     /* device images: the cudaStream_t the caller orders its work
                       * on (NULL: the legacy default stream) */
} ic_image;

/* Largest width or height accepted anywhere (2^20). */
#define IC_MAX_DIM (1 << 20)
/* Default pixel-count limit (width*height) of the loaders: 89,478,485 pixels,
 * Pillow's MAX_IMAGE_PIXELS (a 1 GiB RGB-with-padding budget), so that a
 * decompression bomb (a small file declaring a huge image) is refused right
 * after its header (docs/definitions.md, "Untrusted input"). */
#define IC_DEFAULT_MAX_PIXELS ((uint64_t)89478485)

/* Bytes of one sample of a type: 1 for IC_U8, 2 for IC_U16, 4 for IC_F32, 0
 * for anything else. */
size_t ic_sample_size(ic_sample_type type);

/* Largest sample value of a type: 255 for IC_U8, 65535 for IC_U16, 1 for
 * IC_F32 (its nominal white; floats are never clamped), 0 for anything else.
 * Border values and biases are in these units. */
unsigned ic_sample_max(ic_sample_type type);

/* Allocates a zeroed width x height image with `channels` channels (1..4) in
 * `layout` with samples of `type`. Rows are padded so that pitch is a multiple
 * of 64 bytes. On success *img owns its data (free with ic_image_free). On
 * failure *img is zeroed. Errors: IC_ERR_INVALID_ARG (bad size, channels or
 * type), IC_ERR_TOO_LARGE (over IC_MAX_DIM or overflow), IC_ERR_NOMEM. */
ic_status ic_image_create_type(ic_image *img, int width, int height, int channels, ic_layout layout,
                               ic_sample_type type);

/* ic_image_create_type with IC_U8 samples. */
ic_status ic_image_create(ic_image *img, int width, int height, int channels, ic_layout layout);

/* Fills *img to describe caller-owned memory (not freed by ic_image_free)
 * holding samples of `type` (IC_U16: 2-byte samples in host byte order, `data`
 * and `pitch` 2-byte aligned; IC_F32: 4-byte floats, 4-byte aligned). pitch 0
 * means tightly packed rows. Errors: IC_ERR_INVALID_ARG when data is NULL,
 * sizes or type are out of range, pitch is smaller than a row, or the pitch or
 * address is not a multiple of the sample size. */
ic_status ic_image_wrap_type(ic_image *img, void *data, int width, int height, int channels,
                             ic_layout layout, size_t pitch, ic_sample_type type);

/* ic_image_wrap_type with IC_U8 samples. */
ic_status ic_image_wrap(ic_image *img, uint8_t *data, int width, int height, int channels,
                        ic_layout layout, size_t pitch);

/* Fills *img to describe caller-owned CUDA device memory (memory =
 * IC_MEM_DEVICE): `data` is a device pointer on CUDA device `device`, rows
 * `pitch` bytes apart (0: tightly packed), and `stream` (a cudaStream_t, NULL
 * for the default stream) is the stream whose earlier work produced the data
 * and on which later work may use the result. Nothing is checked on the device
 * here. Such images are accepted by the CUDA backends (ic_convolve filters them
 * without touching host memory) and refused with IC_ERR_UNSUPPORTED by the CPU
 * backends and by the host-side helpers (ic_image_copy, ic_image_save, ...).
 * Errors as ic_image_wrap. */
ic_status ic_image_wrap_device(ic_image *img, void *data, int width, int height, int channels,
                               ic_layout layout, size_t pitch, int device, void *stream);

/* ic_image_wrap_device for samples of `type` (IC_U8, IC_U16 or IC_F32; the
 * alignment rules of ic_image_wrap_type). Which CUDA backends filter which
 * types: ic_convolve. */
ic_status ic_image_wrap_device_type(ic_image *img, void *data, int width, int height, int channels,
                                    ic_layout layout, size_t pitch, ic_sample_type type, int device,
                                    void *stream);

/* Releases the data of an image created by ic_image_create (no-op for wrapped
 * images and NULL) and zeroes the struct. */
void ic_image_free(ic_image *img);

/* Bytes of one row of samples (width*channels samples for AoS, width for SoA
 * planes, times the sample size). */
size_t ic_image_row_bytes(const ic_image *img);

/* Total bytes spanned by the image data (pitch*height, times channels for SoA). */
size_t ic_image_size_bytes(const ic_image *img);

/* Address of the first byte of sample (x, y, c), whatever the type (an IC_U16
 * sample is the uint16_t at that address, an IC_F32 one the float); no bounds
 * checks (callers stay inside). For IC_U8 images this is the sample itself. */
static inline uint8_t *ic_image_at(const ic_image *img, int x, int y, int c)
{
    const size_t es = img->type == IC_U16 ? 2u : img->type == IC_F32 ? 4u : 1u;
    if (img->layout == IC_AOS)
        return img->data + (size_t)y * img->pitch +
               ((size_t)x * (size_t)img->channels + (size_t)c) * es;
    return img->data + ((size_t)c * (size_t)img->height + (size_t)y) * img->pitch + (size_t)x * es;
}

/* Value of sample (x, y, c) of an IC_U8 or IC_U16 image (no bounds checks;
 * ic_image_getf reads any type). */
static inline unsigned ic_image_get(const ic_image *img, int x, int y, int c)
{
    const uint8_t *p = ic_image_at(img, x, y, c);
    return img->type == IC_U16 ? *(const uint16_t *)(const void *)p : *p;
}

/* Sets sample (x, y, c) of an IC_U8 or IC_U16 image to v (the caller keeps v
 * within ic_sample_max). */
static inline void ic_image_set(const ic_image *img, int x, int y, int c, unsigned v)
{
    uint8_t *p = ic_image_at(img, x, y, c);
    if (img->type == IC_U16)
        *(uint16_t *)(void *)p = (uint16_t)v;
    else
        *p = (uint8_t)v;
}

/* Value of sample (x, y, c) of an image of any type, as a float (the sample
 * itself for IC_F32, its integer value for the others). */
static inline float ic_image_getf(const ic_image *img, int x, int y, int c)
{
    const uint8_t *p = ic_image_at(img, x, y, c);
    if (img->type == IC_F32)
        return *(const float *)(const void *)p;
    return (float)(img->type == IC_U16 ? *(const uint16_t *)(const void *)p : *p);
}

/* Sets sample (x, y, c) of an IC_F32 image to v. */
static inline void ic_image_setf(const ic_image *img, int x, int y, int c, float v)
{
    *(float *)(void *)ic_image_at(img, x, y, c) = v;
}

/* Returns 1 when both images have the same size, channel count and sample
 * type and every sample is equal (layouts and pitches may differ), 0 otherwise. */
int ic_image_equal(const ic_image *a, const ic_image *b);

/* Copies src into dst, converting layout (AoS <-> SoA), pitch and sample type
 * as needed. dst must already have src's width, height and channels. Between
 * types: IC_U8 -> IC_U16 is v * 257 (0 -> 0, 255 -> 65535), IC_U16 -> IC_U8 is
 * round(v / 257) (exact, no ties: (v + 128) / 257 in integers); to IC_F32 is
 * v / max (max = ic_sample_max of the source), from IC_F32 is v * max clamped
 * to [0, max] and rounded to nearest, ties to even (NaN -> 0).
 * Errors: IC_ERR_INVALID_ARG on mismatched sizes. */
ic_status ic_image_copy(ic_image *dst, const ic_image *src);

/* Creates *dst (owned) as a copy of src in the given layout (same type). */
ic_status ic_image_clone(ic_image *dst, const ic_image *src, ic_layout layout);

/* Fills an existing image with a deterministic test chart: gradients, hard edges,
 * fine lines, a zone plate and seeded noise, one pattern per region; channels
 * get related but different content. Same size and seed -> same pixels; an
 * IC_U16 chart is the IC_U8 one times 257, an IC_F32 one the IC_U8 one / 255. */
ic_status ic_image_chart(ic_image *img, uint32_t seed);

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */
/* ------------------------------------------------------------------------ */

/* A convolution kernel: odd width x odd height (1..IC_MAX_KERNEL each),
 * coefficients row-major, `divisor` (nonzero) divides every coefficient,
 * `offset` is a bias suggested by the kernel source (a libvips .mat OFFSET);
 * ic_convolve adds params.bias, and the CLI adds the kernel's offset to it. */
typedef struct ic_kernel {
    int width;
    int height;
    float *coef; /* width*height coefficients, row-major, owned */
    double divisor;
    double offset;
    char name[64]; /* "gaussian:5", "custom 3x3", ... for messages */
    /* Nonzero: the filter is the gradient magnitude sqrt(gx^2 + gy^2), gx the
     * result of these weights and gy that of their transpose, both in float32
     * (the named sobel, scharr and prewitt set it; docs/definitions.md#edge-strength). */
    int magnitude;
    /* Set by the gaussian and box named kernels: the weights are this blur
     * (IC_BLUR_GAUSSIAN of sigma_x, sigma_y over the support width x height,
     * or IC_BLUR_BOX), so a backend may run it in constant time per pixel
     * (docs/design/blur.md). Such a kernel may be larger than IC_MAX_KERNEL,
     * up to IC_MAX_BLUR; coef is then NULL and only the backends that say so
     * (cpu, cuda) run it. */
    int blur;
    double sigma_x, sigma_y;
    /* One line the caller should show as a warning (a truncated Gaussian), or "". */
    char warning[96];
} ic_kernel;

#define IC_MAX_KERNEL 255
/* ic_kernel.blur */
#define IC_BLUR_NONE 0
#define IC_BLUR_GAUSSIAN 1
#define IC_BLUR_BOX 2
/* Largest width or height of a gaussian or box kernel, and so the largest
 * sigma: (IC_MAX_BLUR - 1) / 6. */
#define IC_MAX_BLUR 65535
/* Largest |bias| accepted (ic_params.bias, the CLI's --bias) and the range of
 * a .mat file's OFFSET and SCALE (in magnitude; SCALE at least 1/IC_MAX_BIAS):
 * samples are 0..255, so anything larger is a mistake. */
#define IC_MAX_BIAS 1.0e6

/* Parses kernel text (see docs/definitions.md, "Kernel text"):
 *   named:  NAME[:ARGS]          e.g. "gaussian:5", "gaussian:size=7,sigma=1.5"
 *   matrix: rows split by ';', values by spaces/commas, optional "/ D" divisor
 *   file:   "@PATH"              reads the file with ic_kernel_load
 * On success *k owns its coefficients (ic_kernel_free). On error returns
 * IC_ERR_KERNEL (or IC_ERR_IO for @PATH); ic_last_error() quotes the part of
 * the text that is wrong and says why. */
ic_status ic_kernel_parse(ic_kernel *k, const char *text);

/* Loads a kernel file: matrix text with one row per line (optional "/ D" on the
 * last line, '#' comments), or a libvips .mat file (first line "W H SCALE OFFSET").
 * Errors as ic_kernel_parse, IC_ERR_IO when the file cannot be read. */
ic_status ic_kernel_load(ic_kernel *k, const char *path);

/* Creates a kernel from width*height coefficients (copied) and a divisor.
 * Errors: IC_ERR_KERNEL for even or out-of-range sizes, zero or non-finite
 * divisor, non-finite coefficients. */
ic_status ic_kernel_create(ic_kernel *k, int width, int height, const float *coef, double divisor);

/* Releases the coefficients and zeroes the struct (NULL-safe). */
void ic_kernel_free(ic_kernel *k);

/* Effective weight (coefficient / divisor) at column i, row j, in float64. */
double ic_kernel_weight(const ic_kernel *k, int i, int j);

/* Sum of the effective weights. */
double ic_kernel_sum(const ic_kernel *k);

/* Description of one named kernel, for --list-filters. */
typedef struct ic_named_kernel_info {
    const char *name;    /* "gaussian" */
    const char *args;    /* "size=3,sigma=0 (sigma from size when 0)" */
    const char *summary; /* one line */
} ic_named_kernel_info;

/* Returns the table of named kernels and stores its length in *count. */
const ic_named_kernel_info *ic_kernel_list(int *count);

/* A separable decomposition K = sum_r col_r * row_r^T (rank terms), of
 * effective weights, so that a rank-r kernel costs 2*r*K multiply-adds. */
typedef struct ic_factors {
    int rank;       /* 0 when the kernel is not worth factoring */
    int width;      /* kernel width (length of each row vector) */
    int height;     /* kernel height (length of each column vector) */
    float *row;     /* rank * width, owned */
    float *col;     /* rank * height, owned */
    double max_err; /* largest |K - sum| over the weights, float64 */
} ic_factors;

/* Factors the effective weights by SVD, keeping the smallest rank whose
 * reconstruction error stays below tol * max|K| (tol 0 means 1e-6). Rank is
 * capped at max_rank (0: no cap); *f->rank == 0 when no rank <= max_rank fits.
 * f owns its vectors (ic_factors_free). */
ic_status ic_kernel_factor(const ic_kernel *k, double tol, int max_rank, ic_factors *f);

/* Releases the vectors of a factorisation (NULL-safe) and zeroes it. */
void ic_factors_free(ic_factors *f);

/* ------------------------------------------------------------------------ */
/* Filtering parameters                                                      */
/* ------------------------------------------------------------------------ */

/* How samples outside the image are defined (n = image extent, i the index):
 *  CONSTANT : the value params.border_value (0 by default: the seeds' "ghost cells")
 *  REPLICATE: the nearest edge sample            aaa|abcd|ddd
 *  MIRROR   : reflect about the edge sample      dcb|abcd|cba   (reflect-101, OpenCV's default)
 *  REFLECT  : reflect, repeating the edge sample cba|abcd|dcb   (symmetric)
 *  WRAP     : periodic                           bcd|abcd|abc
 * Reflections repeat as often as needed when the kernel is larger than the image. */
typedef enum ic_border {
    IC_BORDER_CONSTANT = 0,
    IC_BORDER_REPLICATE,
    IC_BORDER_MIRROR,
    IC_BORDER_REFLECT,
    IC_BORDER_WRAP
} ic_border;

/* Parses a border name or alias (constant|zero, replicate|edge|nearest|clamp,
 * mirror|reflect101|reflect-101, reflect|symmetric, wrap|periodic|circular).
 * Returns IC_ERR_INVALID_ARG for an unknown name. */
ic_status ic_border_parse(const char *name, ic_border *out);

/* Canonical name of a border mode ("constant", "replicate", ...). */
const char *ic_border_name(ic_border b);

/* Maps coordinate i (any integer) into [0, n) for the mode; returns -1 for
 * IC_BORDER_CONSTANT outside the image. n must be >= 1. */
int ic_border_index(int i, int n, ic_border b);

/* Alpha handling for 2- and 4-channel images (docs/definitions.md, "Alpha"). */
typedef enum ic_alpha {
    IC_ALPHA_AUTO = 0,    /* premultiply when weights sum to 1, else keep */
    IC_ALPHA_PREMULTIPLY, /* filter c*a and a, divide back */
    IC_ALPHA_KEEP,        /* filter colour only, copy alpha */
    IC_ALPHA_INDEPENDENT  /* filter every channel alone (the seeds) */
} ic_alpha;

/* Parses "auto", "premultiply", "keep" or "independent". */
ic_status ic_alpha_parse(const char *name, ic_alpha *out);

/* Canonical name of an alpha mode. */
const char *ic_alpha_name(ic_alpha a);

/* Everything that changes what ic_convolve computes, besides image and kernel. */
typedef struct ic_params {
    ic_border border;
    float border_value; /* for IC_BORDER_CONSTANT, in sample units (0..255, or
                         * 0..65535 for IC_U16 images, any finite float for
                         * IC_F32 images) */
    int correlate;      /* nonzero: correlation (kernel not flipped) */
    float bias;         /* added after the weighted sum, before rounding (sample units) */
    ic_alpha alpha;
    int abs; /* nonzero: |weighted sum| before the bias, rounding and clamping
              * (docs/definitions.md#edge-strength) */
} ic_params;

/* Sets the defaults: mirror border (OpenCV's BORDER_REFLECT_101, so a blur
 * invents no dark or transparent frame), border_value 0 (used only when
 * border is set to IC_BORDER_CONSTANT, the seeds' ghost cells), convolution,
 * bias 0, alpha auto. A NULL ic_params anywhere means these defaults. */
void ic_params_default(ic_params *p);

/* ------------------------------------------------------------------------ */
/* Backends and contexts                                                     */
/* ------------------------------------------------------------------------ */

/* Description of one backend, for --list-backends. */
typedef struct ic_backend_info {
    const char *name;    /* "seq", "cpu", "cuda-global", ... */
    const char *summary; /* one line: what it keeps where */
    int usable;          /* 1 when it can run on this machine now */
    char why[160];       /* when not usable: the reason ("no CUDA device", ...) */
} ic_backend_info;

/* Number of backends compiled into this build. */
int ic_backend_count(void);

/* Fills *info for backend index i (0 <= i < ic_backend_count()), probing
 * whether it is usable here. Errors: IC_ERR_INVALID_ARG for a bad index. */
ic_status ic_backend_get(int i, ic_backend_info *info);

/* Name of the backend "auto" selects on this machine (a CUDA one when a device
 * is present, else the best CPU one). */
const char *ic_backend_auto(void);

/* Per-stage times of the last ic_convolve on a context, in milliseconds.
 * Stages a backend does not have are 0 (CPU backends have no upload). */
typedef struct ic_timing {
    double upload_ms;   /* host -> device copies */
    double kernel_ms;   /* the convolution itself (CUDA events on the GPU) */
    double download_ms; /* device -> host copies */
    double total_ms;    /* wall time of the whole call */
} ic_timing;

/* Most devices one context can split an image across. */
#define IC_MAX_DEVICES 16

/* Number of CUDA devices visible to this process (what --devices all uses);
 * 0 in a build without CUDA, without a driver or without a device. Never
 * aborts and never fails otherwise. */
int ic_cuda_device_count(void);

/* Options of a context. Zero-initialise, then set what you need. */
typedef struct ic_context_options {
    int device;  /* CUDA device ordinal (default 0) */
    int threads; /* CPU worker threads (0: one per core) */
    /* CUDA backends, how a host image travels (IC_TRANSFER_*):
     * AUTO (0, the default): ASYNC for images of at least 1 MiB of samples,
     * SYNC for smaller ones (where staging buys nothing);
     * ASYNC: pinned host staging buffers reused across calls, the image split
     * into row bands (with halo rows) whose upload, kernel and download overlap
     * on several CUDA streams (an image already in cudaHostAlloc'd memory is
     * copied by DMA with no staging);
     * SYNC: one pageable copy of the whole image each way (the behaviour
     * before AUTO existed). Results are identical (except the fast path's FFT
     * method, see n_devices). Device images never travel: they are filtered
     * in place whatever the mode. CPU backends ignore it. */
    int transfer;
    /* CUDA strategy backends: 0 = no limit; otherwise the device buffers of a
     * call stay within this many bytes, the image being processed band by band
     * (implies IC_TRANSFER_ASYNC). A limit too small for one band of 1 output
     * row gives IC_ERR_TOO_LARGE. With device images the limit is kept only
     * when both images are on the device in one layout (nothing but the
     * weights is allocated then); other device-image jobs under a limit give
     * IC_ERR_UNSUPPORTED. */
    size_t device_memory;
    /* Several GPUs. 0: one device, `device`. 1: one device, devices[0].
     * 2..IC_MAX_DEVICES: a CUDA backend splits every image into n_devices
     * shares of whole output rows (share i = rows [i*H/n, (i+1)*H/n), each
     * with the halo rows its kernel reads) filtered concurrently, share i on
     * devices[i], each device with its own state (buffers, streams, plan). The
     * same ordinal may appear twice: two independent states on one GPU (that is
     * how the split is tested on a one-GPU machine). Shares run through the
     * banded pipeline (as IC_TRANSFER_ASYNC; `device_memory` applies per
     * device). Results are those of one device sample for sample (the fast
     * path's FFT method, whose float32 error depends on where its tiles fall,
     * may move a sample that sits within ~1e-4 of a rounding boundary, as
     * IC_TRANSFER_ASYNC may). ic_context_timing() then gives, for upload,
     * kernel and download, the largest over the devices (the shares overlap in
     * time), and total the wall time. CPU backends ignore it, and so does the
     * float64 premultiplied-alpha reference path of backends that do not
     * premultiply themselves (seq, cuda-gemm; docs/definitions.md, "Alpha").
     * Errors at ic_context_create: IC_ERR_INVALID_ARG for n_devices < 0 or >
     * IC_MAX_DEVICES or a negative ordinal; IC_ERR_DEVICE naming an ordinal
     * this machine does not have. */
    int n_devices;
    int devices[IC_MAX_DEVICES];
    /* Host memory budget of one ic_convolve call, in bytes: the source and
     * destination images in host memory plus what the call allocates on the
     * host (ic_convolve_bytes() computes it). 0: ic_max_memory_default();
     * UINT64_MAX: no limit. Over it ic_convolve returns IC_ERR_TOO_LARGE
     * before allocating anything, ic_last_error() naming the limit. Device
     * memory has its own bound (device_memory). */
    uint64_t max_memory;
    /* The `cuda` fast path's cost model uses the device's copy bandwidth and
     * FMA rate, measured once per device, driver and imgconv version and kept
     * in $XDG_CACHE_HOME/imgconv/ (else ~/.cache/imgconv/; a missing, corrupt
     * or unwritable cache only means measuring, ~50 ms, at the first plan).
     * Nonzero: measure again at the first plan of this context, ignoring the
     * cache, and rewrite it (the CLI's --recalibrate). Other backends ignore it. */
    int recalibrate;
    /* Tuning knobs for tests and measurements (forced method, instruction
     * set, tile shapes): see "Advanced API" at the end of this header, which
     * defines struct ic_tuning when IC_ADVANCED_API is defined. Copied at
     * creation; NULL (what zero-initialised options hold): the defaults. */
    const struct ic_tuning *tuning;
} ic_context_options;

/* Values of ic_context_options.transfer. */
#define IC_TRANSFER_AUTO 0
#define IC_TRANSFER_ASYNC 1
#define IC_TRANSFER_SYNC 2

/* A context binds a backend and owns its resources (device buffers, thread
 * pool), reused across calls. Not safe for concurrent use from two threads. */
typedef struct ic_context ic_context;

/* Creates a context for backend `name` ("auto" or NULL picks ic_backend_auto()).
 * opts may be NULL. Errors: IC_ERR_NO_BACKEND (unknown, or not usable here),
 * IC_ERR_DEVICE (the device could not be initialised), IC_ERR_NOMEM. On failure
 * *ctx is NULL and ic_last_error() says why. */
ic_status ic_context_create(ic_context **ctx, const char *name, const ic_context_options *opts);

/* Frees a context and everything it owns (NULL-safe). */
void ic_context_free(ic_context *ctx);

/* Name of the backend the context runs. */
const char *ic_context_backend(const ic_context *ctx);

/* Times of the last successful ic_convolve on this context. */
ic_timing ic_context_timing(const ic_context *ctx);

/* Filters src into dst with kernel k and params p (NULL: defaults).
 * dst must be allocated with src's width, height, channel count and sample
 * type (IC_ERR_INVALID_ARG otherwise); its layout and pitch may differ from
 * src's. src and dst must not overlap. IC_U16 images are filtered by the
 * backends that support them (seq, cpu; the others give IC_ERR_UNSUPPORTED
 * naming the backend). Premultiplied alpha at 16 bits uses a = alpha / 65535.
 * IC_F32 images are filtered by seq, cpu and cuda (the seed-strategy CUDA
 * backends give IC_ERR_UNSUPPORTED naming the backend); their premultiplied
 * alpha takes the alpha sample as it is (a = alpha, nominal opacity 0..1):
 * colour = F(c*a) / F(a) where F(a) > 0, else 0, then + bias; alpha = F(a) +
 * bias; nothing is rounded or clamped (docs/definitions.md, "Float samples").
 *
 * Device images (ic_image_wrap_device) are accepted by the CUDA backends:
 * either or both of src and dst may be device images (a host image on the
 * other side costs one copy over the bus; two device images cost none). The
 * work is queued on the source's stream when src is a device image, else on
 * the destination's (NULL: the legacy default stream), after the work already
 * queued there; when both are device images on different streams it also
 * waits for the destination's stream. ic_convolve returns only after the
 * filtered samples are in dst (completion on return): the caller may read,
 * reuse or free both images at once, from any stream. The images' `device`
 * must be the context's device (IC_ERR_INVALID_ARG otherwise, also when the
 * pointer is not device memory of that device). Layout conversion and
 * IC_ALPHA_KEEP run on the device; premultiplied alpha (IC_ALPHA_PREMULTIPLY,
 * or AUTO resolving to it) on device images gives IC_ERR_UNSUPPORTED unless the
 * backend premultiplies itself, and so does a context with n_devices >= 2.
 * CPU backends refuse device images with IC_ERR_UNSUPPORTED.
 * Errors: IC_ERR_INVALID_ARG, IC_ERR_UNSUPPORTED, IC_ERR_DEVICE, IC_ERR_NOMEM,
 * IC_ERR_TOO_LARGE; ic_last_error() says which argument, CUDA call or limit. */
ic_status ic_convolve(ic_context *ctx, const ic_image *src, ic_image *dst, const ic_kernel *k,
                      const ic_params *p);

/* Filters n images with one kernel and one set of parameters: the same
 * samples as n calls ic_convolve(ctx, &src[i], &dst[i], k, p), i = 0..n-1,
 * and the same rules for every pair (types, layouts, device images). Images
 * may differ in size, channel count, layout and sample type. On the `cuda`
 * backend, when every image is a device image of the same layout, type and
 * channel count, the images are filtered together: one kernel launch per
 * method for all of them (many small images cost about one launch, not n);
 * other backends, host images and mixed batches run the images one after the
 * other (host images staged as ic_convolve stages them). Returns after every
 * dst holds its samples. On failure no guarantee is made about any dst;
 * ic_last_error() names the index of the first image that failed ("image 3:
 * ..."). n == 0 is IC_OK. Errors: those of ic_convolve, and
 * IC_ERR_INVALID_ARG for n < 0 or NULL arrays with n > 0. */
ic_status ic_convolve_batch(ic_context *ctx, int n, const ic_image *src, ic_image *dst,
                            const ic_kernel *k, const ic_params *p);

/* Filters src into dst with n kernels applied in order (a chain): one call,
 * the intermediate images kept in float32 samples, neither rounded nor
 * clamped between steps (docs/definitions.md#chains). p (NULL: defaults)
 * applies to every step: its border and border value to each step's input,
 * correlate and abs to each step, the bias once, before the final rounding.
 * Consecutive linear steps are fused into one kernel where that is exact
 * (wrap border; mirror or reflect after a kernel symmetric in x and y; a 1x1
 * step) and the fused kernel fits IC_MAX_KERNEL; a
 * chain that fuses to one linear kernel runs as ic_convolve with it, on the
 * context's backend; any other chain runs in float32 in the device engine
 * of the `cuda` backend (on the GPU: one upload and one download at most,
 * device images taken as they are) or else in the host engine on the CPU
 * (ic_chain_explain says which and why). Alpha: AUTO premultiplies when the
 * product of the steps' weight sums is 1, else keeps alpha. The host engine
 * takes host images only (IC_ERR_UNSUPPORTED for device images unless the
 * chain fuses to one kernel). n == 1 is ic_convolve. Errors: IC_ERR_INVALID_ARG for
 * n < 1, a NULL array or an invalid kernel (ic_last_error() names the step),
 * and those of ic_convolve. */
ic_status ic_convolve_chain(ic_context *ctx, const ic_image *src, ic_image *dst,
                            const ic_kernel *kernels, int n, const ic_params *p);

/* Writes into buf what ic_convolve_chain(ctx, src, ..., kernels, n, p) does:
 * the steps after fusion (which fused and why), where they run, and, for a
 * chain that fuses to one kernel, the backend's plan (ic_plan_explain).
 * Errors: IC_ERR_INVALID_ARG as ic_convolve_chain. */
ic_status ic_chain_explain(ic_context *ctx, const ic_image *src, const ic_kernel *kernels, int n,
                           const ic_params *p, char *buf, size_t buflen);

/* Writes into buf (one or more lines) how the context's backend would filter
 * src with k and p: the method it picks (direct, separable/low-rank, FFT), the
 * kernel rank, the launch shape and the predicted time where the backend has a
 * cost model. dst is not touched. Backends without a plan write one line.
 * Errors: IC_ERR_INVALID_ARG. */
ic_status ic_plan_explain(ic_context *ctx, const ic_image *src, const ic_kernel *k,
                          const ic_params *p, char *buf, size_t buflen);

/* Host bytes ic_convolve(ctx, src, dst, k, ...) needs with a destination in
 * dst_layout allocated by ic_image_create: src and dst (when in host memory),
 * the layout conversion copy when dst_layout differs from src's, and the
 * backend's own host buffers (the seq backend's padded float plane). This is
 * what ic_context_options.max_memory bounds; callers check it before
 * allocating the destination. 0 when an argument is invalid. */
uint64_t ic_convolve_bytes(const ic_context *ctx, const ic_image *src, const ic_kernel *k,
                           ic_layout dst_layout);

/* Multiply-adds of filtering a width x height image of `channels` channels
 * with k: pixels x channels x taps, where taps is rank x (kw + kh) when k
 * separates at a useful rank (ic_kernel_factor) and that is cheaper, else
 * kw x kh, twice that for an edge strength (k->magnitude); in builds with
 * the cpu backend's FFT, the FFT's arithmetic when k is one it takes at
 * either sample depth and that is cheaper. Needs no image, so a caller can
 * bound a job's work from a file's
 * header before decoding it. Saturates at UINT64_MAX; 0 when an argument is
 * invalid. */
uint64_t ic_convolve_work(int width, int height, int channels, const ic_kernel *k);

/* Default work bound of the CLI's --max-work on CPU backends, in
 * multiply-adds: about 8 s on one core of a current x86 CPU. */
#define IC_DEFAULT_MAX_WORK 50000000000ull

/* One-shot convenience: creates a context for `backend`, filters, frees it.
 * Errors as ic_context_create and ic_convolve, with their message in
 * ic_last_error(). */
ic_status ic_filter(const ic_image *src, ic_image *dst, const ic_kernel *k, const ic_params *p,
                    const char *backend);

/* ------------------------------------------------------------------------ */
/* Image files                                                               */
/* ------------------------------------------------------------------------ */

/* File formats. Format is detected from magic bytes on load and from the
 * extension on save (.png, .jpg/.jpeg, .tif/.tiff, .webp, .pgm, .ppm, .pnm,
 * .pfm, .npy; .pam is not supported). */
typedef enum ic_format {
    IC_FMT_UNKNOWN = 0,
    IC_FMT_PNM, /* binary PGM (P5) / PPM (P6); maxval > 255 is 16-bit (big-endian) */
    IC_FMT_PNG,
    IC_FMT_JPEG,
    IC_FMT_TIFF, /* first image of the file; stored as 8- or 16-bit 1..4 channels, deflate */
    IC_FMT_WEBP, /* still images; stored as RGB or RGBA (grey is expanded) */
    IC_FMT_PFM,  /* Portable Float Map: PF (RGB) / Pf (grey), float32 samples */
    IC_FMT_NPY   /* NumPy .npy: (H, W) or (H, W, C) of uint8, uint16 or float32 */
} ic_format;

/* Bits per sample a format keeps: 16 for PNG, PNM and TIFF (IC_U16 images
 * are written at 16 bits, IC_U8 at 8; IC_F32 images at 16 bits, as
 * ic_image_copy converts, except TIFF, which writes 32-bit float samples), 8
 * for JPEG and WebP (IC_U16 images are written as round(v / 257), IC_F32 as
 * round(v * 255)), 32 for PFM (every image written as float32) and npy
 * (every type written as it is), 0 for IC_FMT_UNKNOWN. */
int ic_format_depth(ic_format f);

/* 1 when support for the format was compiled in (PNM always is). */
int ic_format_supported(ic_format f);

/* Name of a format ("pnm", "png", "jpeg", "tiff", "webp", "pfm", "npy"). */
const char *ic_format_name(ic_format f);

/* Default memory budget (bytes) of the loaders and of the CLI's --max-memory:
 * a quarter of the physical memory, at most 2 GiB (2 GiB when the physical
 * memory cannot be read). */
uint64_t ic_max_memory_default(void);

/* A need against a limit, as the library's messages print them ("375.0 KiB"
 * against "300.0 KiB"): each in the largest of bytes, KiB, MiB, GiB, TiB that
 * keeps it at 1 or more, and both in bytes when they would read the same.
 * need_text and limit_text receive n bytes each. */
void ic_bytes_text(char *need_text, char *limit_text, size_t n, uint64_t need, uint64_t limit);

/* Colour profile and camera data of an image file, carried from input to
 * output (docs/definitions.md, "Metadata"). Both blobs are copied verbatim:
 *   icc : an ICC profile (PNG iCCP, JPEG APP2 ICC_PROFILE, TIFF tag 34675,
 *         WebP ICCP), NULL/0 when the file has none;
 *   exif: the EXIF block as a TIFF structure starting "II*\0" or "MM\0*"
 *         (PNG eXIf, JPEG APP1 after "Exif\0\0", WebP EXIF; for TIFF files,
 *         a block built from IFD0's EXIF tags and the EXIF directory, and
 *         written back as tags: docs/definitions.md, "Metadata", lists what is carried),
 *         NULL/0 when none.
 * Pixels are never rotated: the EXIF orientation tag is kept as it was, so
 * viewers show the output the way they showed the input (what libvips and
 * ImageMagick do unless asked to auto-rotate); TIFF rows too are read as
 * stored, their Orientation tag going into the block. */
typedef struct ic_metadata {
    uint8_t *icc;
    size_t icc_size;
    uint8_t *exif;
    size_t exif_size;
} ic_metadata;

/* Largest ICC profile or EXIF block read or written (bytes). */
#define IC_MAX_METADATA ((size_t)16 << 20)

/* Releases the blobs of m (NULL-safe) and zeroes it. */
void ic_metadata_free(ic_metadata *m);

/* The EXIF orientation (1..8, 1 = as stored) of m's EXIF block, 0 when there
 * is no block or no valid orientation tag in its first directory. */
int ic_metadata_orientation(const ic_metadata *m);

/* Load options (zero-initialise; zero fields take the defaults). */
typedef struct ic_load_options {
    int channels;        /* 0: as stored; 1, 2, 3 or 4: convert (seed's channel_force) */
    ic_layout layout;    /* layout of the returned image */
    uint64_t max_pixels; /* 0: IC_DEFAULT_MAX_PIXELS; checked before allocating */
    /* 0: ic_max_memory_default(). Bytes the decoded image may take, with the
     * decoder's whole-image buffers (progressive JPEG coefficients) and the
     * converted copy that `channels` or `layout` asks for: checked after the
     * header, before anything of that size is allocated. */
    uint64_t max_memory;
    /* When non-NULL, receives the file's ICC profile and EXIF block (zeroed
     * when it has none or on error; free with ic_metadata_free). */
    ic_metadata *metadata;
    /* When non-NULL, called once per load, on the loading thread, as soon as
     * the file's header has passed the limits above (size, max_pixels,
     * max_memory) and before the decoder allocates the image and decodes its
     * body, with the image's width and height. A file refused by a limit (a
     * decompression bomb) or whose header is unreadable never calls it; a
     * file that fails later in its body may. It lets a caller start costly
     * work that should overlap the decode but never be paid for a refused
     * file (the CLI starts its CUDA context there). Called by ic_image_load
     * and ic_image_decode (and so by ic_gpu_codec_decode for the files it decodes
     * on the CPU only). It must not call back into this load. */
    void (*header_ok)(void *user, int width, int height);
    void *header_ok_user; /* passed to header_ok */
    /* 0: files with more than 8 bits per sample (16-bit PNG and TIFF, PNM
     * with maxval > 255) load as IC_U16 images, float files (PFM, 32-bit
     * float TIFF, float32 npy) as IC_F32, others as IC_U8. Nonzero: every
     * image loads as IC_U8, 16-bit samples converted as round(v / 257), float
     * ones as ic_image_copy converts them. */
    int eight_bit;
    /* 0: a JPEG whose entropy-coded data is damaged (corrupt Huffman codes,
     * bytes before a marker, data that ends early) is IC_ERR_FORMAT, as a
     * PNG with a bad CRC is. Nonzero: it decodes as far as libjpeg gets,
     * the rest filled in, for salvaging a photo. */
    int accept_damaged;
    /* When non-NULL, set to 1 when accept_damaged let damaged data through,
     * to 0 otherwise. */
    int *damaged;
    /* 0 or 1: one thread (the library starts no thread). N > 1: a baseline
     * JPEG with restart markers (imgconv's own large JPEGs have them, as do
     * many cameras') and of 1 MP or more is decoded in parts between its
     * markers on up to N threads, the calling one included, to exactly the
     * pixels of the one-thread decode; a file whose parts do not all decode
     * cleanly is decoded again on one thread, which gives today's verdict
     * and message. A PNG that imgconv wrote in strips (an icST chunk
     * says where each begins) is inflated strip by strip on up to N
     * threads, to exactly the one-thread pixels; a file whose strips do
     * not all check out is decoded in one piece, as before. Other files
     * and formats ignore it. Negative: IC_ERR_INVALID_ARG. */
    int threads;
} ic_load_options;

/* Loads an image file into *img (owned): reads the file and decodes it as
 * ic_image_decode does. On error *img is zeroed and ic_last_error() holds one
 * line without the file name, e.g. "truncated PNG data" (the caller knows the
 * name and puts it in front).
 * A path that is not a regular file (a FIFO, a device, a socket, a
 * directory) is refused with IC_ERR_IO without blocking or reading it.
 * Errors: IC_ERR_IO (cannot open/read), IC_ERR_FORMAT (corrupt, truncated,
 * unknown or unsupported format), IC_ERR_TOO_LARGE (over max_pixels or
 * max_memory; the message names the limit), IC_ERR_NOMEM. */
ic_status ic_image_load(ic_image *img, const char *path, const ic_load_options *opts);

/* Decodes an image held in memory (size bytes at data, not modified, not
 * retained) into *img (owned). The format is detected from the magic bytes,
 * as ic_image_load does for files; options, limits, errors and messages are
 * those of ic_image_load (an empty buffer is IC_ERR_FORMAT "empty file").
 * This is how images arriving on a pipe or from the network are read. */
ic_status ic_image_decode(ic_image *img, const void *data, size_t size,
                          const ic_load_options *opts);

/* Reads only the header of an encoded image (size bytes at data: the whole
 * file or just its start) and checks it against opts' limits as
 * ic_image_decode would, allocating nothing of the image's size: a caller
 * can refuse a file declaring a huge image before reading all of it.
 * Returns IC_OK with the image's *width and *height when the header passes;
 * IC_ERR_TOO_LARGE (over max_pixels or max_memory), IC_ERR_FORMAT (corrupt,
 * unknown, or a header that does not end within size bytes), as
 * ic_image_decode, with the message in ic_last_error(). */
ic_status ic_image_probe(const void *data, size_t size, const ic_load_options *opts, int *width,
                         int *height);

/* Save options (zero-initialise; zero fields take the defaults). */
typedef struct ic_save_options {
    int quality;  /* JPEG and lossy WebP quality 1..100; 0 means 92 */
    int lossless; /* WebP: nonzero for lossless (quality is then ignored) */
    /* 1 (fastest) .. 9 (smallest); 0 means the default. PNG: libdeflate's
     * level (2..9 -> 3/5/6/7/8/10/11/12) where libdeflate codes the image,
     * IC_PNG_DEFAULT_LEVEL by default; an image zlib's run-length coder
     * compresses smaller (noisy photographs) ignores it (docs/definitions.md, "Formats").
     * PNG level 1 is the fast mode: one of the UP, SUB and PAETH filters and
     * Huffman codes alone (zlib's run-length coder on rows of runs).
     * TIFF: zlib's level, 6 by default. */
    int compression;
    /* When non-NULL, written into PNG, JPEG, WebP and TIFF outputs (ICC and
     * EXIF; TIFF: the EXIF tags libtiff knows); not retained. A profile whose
     * colour space does not fit the stored channels (an RGB profile on a grey
     * output) is left out, as is EXIF over the 65527 bytes a JPEG APP1
     * segment can hold. */
    const ic_metadata *metadata;
    /* 0 or 1: one thread (the library starts no thread). N > 1: a JPEG of
     * 1 MP or more is coded in horizontal strips on up to N threads (the
     * calling one included) and stored with a restart marker between strips;
     * it decodes to exactly the pixels of the one-thread file, and its bytes
     * are the same for every N > 1. A PNG over 512 KiB of rows is filtered
     * and deflated in row strips on up to N threads into its one zlib
     * stream, the same bytes for every N (libdeflate builds; libpng writes
     * on one thread). Smaller JPEGs and other formats ignore it. Negative:
     * IC_ERR_INVALID_ARG. */
    int threads;
    /* 0: an existing file at the path is replaced atomically, keeping its
     * mode (and owner, where the process may set it); a symbolic link there
     * is replaced itself, never written through. Nonzero: the save fails
     * with IC_ERR_IO ("the output exists ...") when anything is at the path
     * when the file is put in place, a dangling symbolic link included:
     * the last step is exclusive, so a file that appears while the output
     * is being written is never replaced. */
    int no_replace;
} ic_save_options;

/* The level PNG files are written with when ic_save_options.compression is
 * 0 (bench/run.sh png measured the choice; docs/definitions.md, "Formats",
 * maps levels to libdeflate's). */
#define IC_PNG_DEFAULT_LEVEL 5

/* Saves img (IC_U8 or IC_U16) to path, format by extension. IC_U16 images are
 * written at 16 bits by PNG, PNM (maxval 65535) and TIFF, and converted to 8
 * bits (round(v / 257)) for JPEG and WebP: ic_format_depth says which. The
 * data is written to a file without a name (O_TMPFILE; elsewhere a hidden temporary) in the target
 * directory and put in place over path only when complete, so a failure or an
 * interruption never leaves a partial file (see ic_image_save_cleanup). Channels
 * stored: PNG and TIFF as the image (1..4); WebP RGB or RGBA (grey expanded,
 * alpha kept); PNM and JPEG grey or RGB (alpha dropped). Errors: IC_ERR_IO,
 * IC_ERR_UNSUPPORTED (format not built in, unknown extension, or a WebP side
 * over 16383), IC_ERR_INVALID_ARG. */
ic_status ic_image_save(const ic_image *img, const char *path, const ic_save_options *opts);

/* Removes the temporary files of every ic_image_save in progress in this
 * process. Async-signal-safe: meant for the handlers of SIGINT, SIGTERM,
 * SIGHUP and SIGPIPE of a program that then dies (the imgconv CLI installs
 * them), since saves write where nothing is visible until they complete: an
 * anonymous O_TMPFILE file on Linux (nothing to remove even after SIGKILL), or
 * a hidden DIR/.NAME.XXXXXX where the file system does not support it. */
void ic_image_save_cleanup(void);

/* Format for a path's extension, IC_FMT_UNKNOWN when none matches. */
ic_format ic_format_from_path(const char *path);

/* Encodes a host image as ic_image_save would write it to a file named `name`
 * (only its extension matters: "x.png", ".jpg"), into a buffer allocated with
 * malloc: *data (free() it) of *size bytes. Errors as ic_image_save;
 * IC_ERR_UNSUPPORTED for a device image. */
ic_status ic_image_encode(const ic_image *img, const char *name, const ic_save_options *opts,
                          uint8_t **data, size_t *size);

/* Writes size bytes (an encoded file, e.g. from ic_gpu_codec_encode) to path with
 * ic_image_save's atomic save: a temporary file in the target directory,
 * synced and renamed over path; a failure leaves no partial file. Errors:
 * IC_ERR_IO, IC_ERR_INVALID_ARG, IC_ERR_NOMEM. */
ic_status ic_bytes_save(const char *path, const void *data, size_t size);
/* ic_bytes_save with options: only opts->no_replace applies (NULL: none). */
ic_status ic_bytes_save_opts(const char *path, const void *data, size_t size,
                             const ic_save_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* IMGCONV_H */

/* ======================================================================== */
/* Advanced API                                                              */
/* ======================================================================== */
/*
 * Define IC_ADVANCED_API before including this header to get it (as zstd's
 * ZSTD_STATIC_LINKING_ONLY). It exposes what the library decides on its own
 * (the plan of a call), switches that override those decisions (for tests,
 * benchmarks and profiling) and device-resident runs that do not wait. These
 * declarations MAY CHANGE BETWEEN MINOR VERSIONS: structs may grow, enums may
 * gain values, calls may be renamed. Code that uses them should be built
 * against the header of the exact version it links with. This section has a
 * guard of its own: a file may include imgconv.h first without the macro and
 * again after defining it.
 *
 * None of it changes what a call computes: a forced method or a tile shape
 * produces the same samples the planner's choice does (within the rounding
 * documented for the FFT method, docs/definitions.md, "Accuracy"); only speed differs.
 */
#if defined(IC_ADVANCED_API) && !defined(IMGCONV_H_ADVANCED)
#define IMGCONV_H_ADVANCED

#ifdef __cplusplus
extern "C" {
#endif

/* A filtering method. The `cuda` backend (the fast path) has all of them, the
 * `cpu` backend DIRECT, SEP and (built with KissFFT) FFT; other backends have one method of their own
 * and report IC_METHOD_AUTO in their plan. */
typedef enum ic_method {
    IC_METHOD_AUTO = 0, /* the backend's planner decides (the default) */
    IC_METHOD_DIRECT,   /* the kw*kh sum (cuda: shared-memory tiles, kernels up to 31x63) */
    IC_METHOD_SEP,      /* separable / low-rank: K = sum_r col_r row_r^T, r row + r column passes */
    IC_METHOD_FFT,      /* overlap-save tiles, float32: cuda through cuFFT, cpu through KissFFT */
    IC_METHOD_GLOBAL,   /* cuda: one thread per output sample, any kernel size */
    IC_METHOD_ROWS,     /* cuda: square 3..9 kernels, 16 samples x 1/2/4/8 rows per thread, or
                         * 8 samples x many rows (separable 5x5..9x9) */
    IC_METHOD_TENSOR,   /* cuda: the kw*kh sum on the tensor cores (8-bit samples, kernels
                         * 3..31 wide, sm_80 and later; float32 rounding:
                         * docs/definitions.md, "Accuracy") */
    IC_METHOD_BLUR      /* cuda: gaussian and box kernels of any size as float64 prefix sums,
                         * constant time per sample (docs/design/blur.md) */
} ic_method;

/* Name of a method ("auto", "direct", "sep", "fft", "global", "rows", "tensor",
 * "blur"). */
const char *ic_method_name(ic_method m);

/* Instruction sets of the `cpu` backend's inner loops. */
typedef enum ic_cpu_isa {
    IC_ISA_AUTO = 0, /* the best this CPU and build have (the default) */
    IC_ISA_SCALAR,   /* portable C (the SSE2 baseline on x86-64) */
    IC_ISA_AVX2,     /* AVX2 + FMA */
    IC_ISA_AVX512    /* AVX-512F/BW */
} ic_cpu_isa;

/* Name of an instruction set ("auto", "scalar", "avx2", "avx512"). */
const char *ic_cpu_isa_name(ic_cpu_isa isa);

/* Values of ic_tuning.calibrate. */
#define IC_CALIBRATE_AUTO 0    /* cached ceilings, else measured (ic_context_options.recalibrate) */
#define IC_CALIBRATE_BUILTIN 1 /* no probe, no cache: the built-in figures */

/* Tuning knobs: zero-initialise (every zero field is the default), set what
 * you need, pass it as ic_context_options.tuning or to
 * ic_context_set_tuning(). The library reads no environment variable to
 * decide how to filter. A knob a backend has no use for is ignored by it. */
typedef struct ic_tuning {
    /* Method to use. cuda: the method runs every job it can take (direct: kernels up to
     * 31 wide and 63 tall; sep: square kernels up to 31 whose factors are
     * exact enough; fft: kernels whose weights are not all multiples of 2^-16
     * and jobs without premultiplied alpha; rows: square 3, 5, 7, 9 kernels on
     * 1, 3 or 4 channels AoS or any SoA; global: every job); a job it cannot
     * take gets the planner's choice. cpu: DIRECT always sums kw*kh taps; SEP
     * takes the separable path whenever factors reproduce every weight within
     * 2^-20 (relative), at any cost (rank up to min(kw, kh)); FFT takes every
     * job whose weights are not all multiples of 2^-16 and without
     * premultiplied alpha, whatever its predicted error (builds with KissFFT;
     * docs/backends.md#the-fft-path-on-the-cpu); GLOBAL and ROWS are ignored. */
    ic_method method;
    /* cpu: instruction set of the inner loops. One this CPU or build lacks
     * makes ic_convolve and ic_plan_get fail with IC_ERR_UNSUPPORTED, naming
     * it. */
    ic_cpu_isa cpu_isa;
    /* cpu: nonzero cuts every job into tiny strips, bands and passes and
     * wakes the thread pool even for small images, so that every seam of the
     * tiling is crossed (for tests: slow). */
    int cpu_tiny;
    /* cuda: IC_CALIBRATE_BUILTIN plans with built-in ceilings instead of
     * reading or measuring the device's; read at the first plan of a
     * context. */
    int calibrate;
    /* cuda, fft method: tile size N (a power of two, 64..8192, larger than
     * the kernel). 0: the planner's (the smallest power of
     * two >= 4K, at least 256, 512 from K = 17). Other values are refused. */
    int fft_n;
    /* cuda, rows method: nonzero keeps the full K*K sum where the planner
     * would run separable passes in registers. */
    int rows_full;
    /* cuda, rows method: output rows per thread, 1, 2, 4, 8, 16, 32 or 64;
     * 8 and more apply to separable kernels, taken
     * one input row at a time (a 3x3 at 8, a 5x5..9x9 as asked), which the
     * full sum runs at 4. 0: the planner's (8 for a separable 3x3, 4 on an
     * image too small to give each SM 4 warps at 8; for a
     * separable 5x5, 7x7 or 9x9 the rows that give each SM the warps it
     * wants, up to the image's height; 4 or 2 by image size for a full 3x3
     * or 5x5, 2 for a full 7x7, 2 or 1 for a full 9x9). Other values are
     * refused. */
    int rows_shape;
    /* cuda, direct, sep and tensor methods (shared-memory tiles): channels per block,
     * 0 the planner's, 1 one channel, 2 every channel of the image; SoA and
     * one-channel images always take one, premultiplied alpha every one (a
     * forced value that does not apply is ignored). */
    int tile_channels;
    /* cuda, direct, sep and tensor methods: output rows per block, 0 the planner's,
     * or 8, 16, 32, 64 (a block holds at most 384 threads: 32 per channel
     * and 8 rows, so 64 rows take one channel a block; the tensor method's
     * rank-1 passes also launch 512 or 768 threads: every channel of 64 rows
     * of a 2- or 3-channel image, of 32 rows of an RGBA one). A shape the
     * method cannot launch (too much shared memory) leaves the planner's. */
    int tile_rows;
    /* cuda, fft method: where the spectrum multiply runs. cuFFT can link it
     * into its R2C transform as a callback when a plan is made (tens of ms,
     * once per plan), which saves the method a pass over the spectrum (about
     * 7% at 8K 31x31): 0 (auto) once the context has run about half a
     * second of FFT work, 1 (always) from the first call, 2 (never). The
     * results are the same either way (the GPU tests compare them). */
    int fft_fuse;
} ic_tuning;

/* Replaces the tuning of a context (t NULL: the defaults), effective from the
 * next call on it. Errors: IC_ERR_INVALID_ARG for a NULL ctx, an unknown
 * enum value, fft_n or rows_shape out of range (ic_last_error() says which). */
ic_status ic_context_set_tuning(ic_context *ctx, const ic_tuning *t);

/* Copies the context's current tuning into *t. */
ic_status ic_context_get_tuning(const ic_context *ctx, ic_tuning *t);

/* Parses tuning text into *t (fields not named keep their value): a comma-
 * separated list of KEY=VALUE with keys method (auto|direct|sep|fft|global|
 * rows), cpu-isa (auto|scalar|avx2|avx512), cpu-tiny (0|1), calibrate
 * (auto|builtin), fft-n (N), fft-fuse (auto|always|never), rows-full (0|1),
 * rows-shape (0|1|2|4|8|16|32|64),
 * tile-channels (0|1|2), tile-rows (0|8|16|32|64); e.g.
 * "method=rows,rows-full=1,rows-shape=2" (the CLI's --tune). Errors:
 * IC_ERR_INVALID_ARG naming the first bad item (*t is then unchanged). */
ic_status ic_tuning_parse(const char *text, ic_tuning *t);

/* Where the `cuda` backend's device ceilings come from (ic_plan.ceilings). */
#define IC_CEILINGS_NONE 0     /* not a cost-model backend */
#define IC_CEILINGS_BUILTIN 1  /* built-in figures (IC_CALIBRATE_BUILTIN, or a failed probe) */
#define IC_CEILINGS_MEASURED 2 /* measured by this process (and written to the cache) */
#define IC_CEILINGS_CACHED 3   /* read from the user's calibration cache */

/* The plan of one call: what ic_plan_explain() prints, as numbers. Fields a
 * backend does not have are 0 (predictions -1). */
typedef struct ic_plan {
    const char *backend; /* the context's backend name (static) */
    ic_method method;    /* the method that runs; AUTO for backends without methods */
    int forced;          /* 1 when method is the tuning's forced one */
    int rank;            /* sep/rows: rank terms run; 0 for a full sum */
    int kernel_rank;     /* the factorisation's rank, 0 when full rank or not factored */
    double factor_err;   /* when rank > 0: max |K - sum col row^T| */
    int premultiply;     /* 1 when the backend premultiplies alpha itself in this call */
    /* launch shape (cuda). direct, sep: tile_w x tile_h pixels of
     * channels_per_block channels per block; rows: rows_per_thread; fft:
     * fft_tiles tiles of fft_n^2, fft_valid^2 of them output (cpu: tiles need not
     * be square, fft_n and fft_valid are their widths); global: one
     * thread per sample. threads and blocks: the main kernel's launch (fft:
     * the tile-building kernel, blocks 0). */
    int threads, blocks;
    size_t smem; /* dynamic shared memory per block, bytes */
    int tile_w, tile_h, channels_per_block;
    int rows_per_thread;
    int fft_n, fft_valid, fft_tiles;
    int fft_fused; /* fft: 1 when its spectrum multiply runs inside cuFFT's R2C transform */
    /* cost model (cuda) */
    double fmas;           /* multiply-adds of the whole call */
    double bytes;          /* device-memory bytes the model counts */
    double pred_ms;        /* predicted kernel time of the method that runs */
    double pred_direct_ms; /* predictions of the candidates (-1: not possible) */
    double pred_sep_ms;
    double pred_fft_ms;
    double pred_tensor_ms;
    /* device ceilings (cuda): measured once per device, driver and version */
    int sms;          /* streaming multiprocessors */
    double copy_bps;  /* device-to-device copy, bytes read + written per second */
    double fma_per_s; /* fp32 multiply-adds per second */
    int ceilings;     /* IC_CEILINGS_* */
    /* cpu */
    ic_cpu_isa isa; /* instruction set of the inner loops */
    int workers;    /* threads the call runs on */
    /* CUDA strategy backends (cuda-global, cuda-tiled-*, ...): the banded
     * pipeline (ic_context_options.transfer, device_memory) */
    int bands, band_rows, streams; /* when a host image takes it; 0 otherwise */
    size_t device_min_bytes;       /* the smallest device_memory limit this call works under */
} ic_plan;

/* Plans ic_convolve(ctx, src, dst, k, p) without running it (dst is not
 * needed: it is taken to be like src). The plan is the one that call would
 * run, under the context's tuning. For a context split across devices it is
 * the first device's plan for the whole image. Backends without a planner
 * fill backend, method AUTO and the -1 predictions. Errors: IC_ERR_INVALID_ARG,
 * IC_ERR_UNSUPPORTED (a forced instruction set this CPU lacks),
 * IC_ERR_DEVICE, IC_ERR_NOMEM. */
ic_status ic_plan_get(ic_context *ctx, const ic_image *src, const ic_kernel *k, const ic_params *p,
                      ic_plan *plan);

/* Device-resident run that does not wait: src and dst are device images
 * (ic_image_wrap_device) on the context's device, of the same layout; the
 * work is queued on src's stream (after what is queued there) and the call
 * returns without waiting for it: the caller synchronises that stream before
 * reading dst or reusing src. Nothing crosses the bus except the kernel's
 * weights when they change (one small synchronous copy). This is what the
 * benchmark times with CUDA events. Only the `cuda` backend on one device
 * has it; ic_context_timing() is not updated. Alpha: IC_ALPHA_KEEP (or AUTO
 * resolving to it) on 2- and 4-channel images is not available here.
 * Errors: IC_ERR_UNSUPPORTED (another backend, several devices, host
 * images, different layouts, alpha keep), IC_ERR_INVALID_ARG, IC_ERR_DEVICE,
 * IC_ERR_NOMEM. */
ic_status ic_convolve_async(ic_context *ctx, const ic_image *src, ic_image *dst, const ic_kernel *k,
                            const ic_params *p);

/* ic_convolve_batch that does not wait: every src and dst is a device image
 * on the context's device, all of one layout, sample type and channel count;
 * the work is queued on src[0]'s stream (the other images' streams are not
 * waited for: the caller orders them) and the call returns at once, as
 * ic_convolve_async. Only the `cuda` backend on one device has it. Errors as
 * ic_convolve_async, and IC_ERR_UNSUPPORTED for a batch that is not uniform
 * (ic_last_error() says which image differs). */
ic_status ic_convolve_batch_async(ic_context *ctx, int n, const ic_image *src, ic_image *dst,
                                  const ic_kernel *k, const ic_params *p);

/* ---- choosing between cpu and cuda for a whole job (the CLI's --backend auto) ----
 *
 * ic_backend_auto() names the best usable backend whatever the job; a whole
 * job also pays the GPU's start-up, and its codecs run where they run.
 * ic_backend_choose() predicts the wall time of the whole job on `cpu` and on
 * `cuda` from a description of the job and a table of rates, and names the
 * faster. docs/backends.md ("Auto: the whole job") gives the model. */

/* The rates the model reads (ic_auto_rates_default fills the built-in ones,
 * measured on a 16-core H200 machine). Codec costs are seconds per megapixel
 * of 3-channel 8-bit samples on one core (scaled by channels / 3 and by 2 for
 * 16-bit samples), indexed by ic_format. */
typedef struct ic_auto_rates {
    int cpu_cores;         /* cores the CPU backend and the batch workers use */
    double cpu_init_s;     /* a CPU context (its thread pool) */
    double cpu_mac_direct; /* multiply-adds per second on one core, the kw*kh sum */
    double cpu_mac_sep;    /* ... the separable passes */
    double cpu_decode_s[6], cpu_encode_s[6]; /* one core, per megapixel, by ic_format */
    double cpu_encode_par[6]; /* speed-up of one image's encode on every core (1: serial) */
    double cpu_decode_par[6]; /* ... of its decode */
    double gpu_init_s;        /* driver and context: cuInit, the primary context */
    double gpu_exit_s;        /* the CUDA runtime's tear-down at exit */
    double gpu_codec_init_s;  /* nvJPEG's handle and states */
    double gpu_codec_overlap; /* the share of it a batch hides behind the cores' decodes */
    double gpu_mac_per_s;     /* the device's multiply-adds per second, as the filter gets them */
    double gpu_launch_s;      /* per image: launches and synchronisation */
    double bus_bps;           /* host <-> device bytes per second (pageable memory) */
    double gpu_decode_s;      /* nvJPEG batched decode, seconds per megapixel (whole device) */
    double gpu_encode_s;      /* nvJPEG encode, seconds per megapixel (whole device) */
    double gpu_blur_per_s;    /* samples a second of the cuda blur method, any sigma */
} ic_auto_rates;

/* Fills *r with the built-in rates, cpu_cores = the online cores (capped by
 * threads when threads > 0). */
void ic_auto_rates_default(ic_auto_rates *r, int threads);

/* What a job is: n_images images like the one described (a batch is taken to
 * be n_images of its first image's size). */
typedef struct ic_auto_job {
    int n_images;                /* >= 1 */
    int width, height, channels; /* one image; channels 1..4 */
    int wide;                    /* 16-bit samples */
    ic_format in_format;         /* IC_FMT_UNKNOWN: raw frames (no decode) */
    ic_format out_format;        /* IC_FMT_UNKNOWN: raw frames (no encode) */
    int kw, kh;                  /* the kernel's size */
    double macs;                 /* multiply-adds of one image (ic_convolve_work) */
    int separable;               /* macs counts separable passes (cheaper than kw*kh) */
    int gpu_codec;               /* the cuda run would decode and encode JPEGs with nvJPEG */
    int overlap_init;            /* the GPU start-up runs while the first image decodes */
    int blur;                    /* the kernel's ic_kernel.blur: cuda runs it by gpu_blur_per_s */
} ic_auto_job;

/* The choice, with both predictions and one line saying why. */
typedef struct ic_auto_choice {
    const char *backend; /* "cpu" or "cuda" (static) */
    double cpu_s;        /* predicted wall seconds of the whole job on cpu */
    double cuda_s;       /* ... on cuda (-1: not predicted, no CUDA backend) */
    int probed;          /* 1 when the CUDA devices were counted (the CUDA driver loaded) */
    char reason[320];
} ic_auto_choice;

/* Chooses the backend for job under rates (NULL: ic_auto_rates_default(0)).
 * gpu: 1 or 0 when the caller knows whether a usable CUDA device exists
 * (tests), -1 to let the library find out, which it does only when the
 * prediction favours cuda, so that a job that is cheaper on the CPU never
 * loads the CUDA driver (about 0.2 s). Errors: IC_ERR_INVALID_ARG. */
ic_status ic_backend_choose(const ic_auto_job *job, const ic_auto_rates *rates, int gpu,
                            ic_auto_choice *out);

#ifdef __cplusplus
}
#endif

#endif /* IC_ADVANCED_API */

/* ======================================================================== */
/* Deprecated names: kept for one release after the renames that gave the   */
/* API one rule, noun then verb (docs/naming.md). Each calls its new name;   */
/* the compiler warns where one is used. Define IC_NO_DEPRECATED to hide     */
/* them. Removed in the next minor version.                                  */
/* ======================================================================== */
#if !defined(IC_NO_DEPRECATED) && !defined(IMGCONV_H_DEPRECATED)
#define IMGCONV_H_DEPRECATED

static inline IC_DEPRECATED("use ic_plan_explain") ic_status
    ic_explain(ic_context *ctx, const ic_image *src, const ic_kernel *k, const ic_params *p,
               char *buf, size_t buflen)
{
    return ic_plan_explain(ctx, src, k, p, buf, buflen);
}

static inline IC_DEPRECATED("use ic_bytes_save") ic_status
    ic_save_bytes(const char *path, const void *data, size_t size)
{
    return ic_bytes_save(path, data, size);
}

static inline IC_DEPRECATED("use ic_image_save_cleanup") void ic_save_cleanup(void)
{
    ic_image_save_cleanup();
}

static inline IC_DEPRECATED("use ic_max_memory_default") uint64_t ic_default_max_memory(void)
{
    return ic_max_memory_default();
}

static inline IC_DEPRECATED("use ic_kernel_list") const ic_named_kernel_info *ic_named_kernels(
    int *count)
{
    return ic_kernel_list(count);
}

#endif /* deprecated names */
