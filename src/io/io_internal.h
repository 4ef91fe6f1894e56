/*
 * io_internal.h - what the image file readers and writers of src/io/ share.
 *
 * io.c holds the format table, opens files, detects the format and
 * dispatches; atomic.c publishes outputs; io_util.c holds the helpers the
 * format files share (limit checks, row conversion, 16-bit samples). The
 * format files (pnm.c, png.c, jpeg.c, tiff.c, webp.c) only turn a stream into
 * an interleaved (AoS) ic_image with the channels as stored, and an AoS
 * ic_image into a stream; they call io_util.c, never io.c.
 * This header is private to src/io/: it knows files and pixels, never
 * convolution or backends (STYLE "Layers").
 */
#ifndef IC_IO_INTERNAL_H
#define IC_IO_INTERNAL_H

#include <stdio.h>

#include "core/error.h"
#include "imgconv.h"

/* Size of the message buffers the readers and writers fill (one line). */
#define IC_IO_ERRLEN 512

/* The limits a reader enforces (docs/definitions.md#untrusted-input), all effective
 * values (never 0). max_memory bounds the bytes of the decoded image plus,
 * when convert_channels is nonzero, the converted copy ic_image_decode makes
 * of it afterwards (channel forcing or a layout change) with that many
 * channels: the peak the load reaches. */
/* ic_load_options.header_ok of one load, and whether it was called; with
 * `stop` (ic_image_probe) the read ends there, the header's size in width
 * and height. */
typedef struct ic_io_hook {
    void (*fn)(void *user, int width, int height);
    void *user;
    int fired;
    int stop;
    int width, height;
} ic_io_hook;
typedef struct ic_io_limits {
    uint64_t max_pixels;
    uint64_t max_memory;
    int convert_channels;
    ic_io_hook *hook;   /* NULL: none */
    int accept_damaged; /* ic_load_options.accept_damaged */
    int *damaged;       /* NULL, or set to 1 when damaged data was let through */
    int threads;        /* ic_load_options.threads: 0 and 1, one */
    /* The whole input when it is in memory (ic_image_decode), else NULL:
     * the JPEG decoder on several threads reads it there rather than from
     * the stream's file. */
    const uint8_t *bytes;
    size_t nbytes;
    /* Tests of the JPEG decoder on several threads (jpeg_restart.c), zero
     * otherwise: jpeg_min_pixels, the least pixels of a part (0: the
     * default); jpeg_fail_part n > 0, part n - 1 fails as on a libjpeg
     * error; jpeg_parts, when non-NULL, receives how many parts the image
     * was decoded in (0: serially). */
    int jpeg_min_pixels;
    int jpeg_fail_part;
    int *jpeg_parts;
} ic_io_limits;

/* io_util.c. Checks decoded dimensions before anything is allocated: zero sizes are
 * IC_ERR_FORMAT, a side over IC_MAX_DIM, width*height over lim->max_pixels or
 * (when channels > 0) the bytes of a width x height x channels image (plus
 * the converted copy) over lim->max_memory is IC_ERR_TOO_LARGE, with a message
 * naming the limit and how to raise it. channels 0 checks sizes and pixels only
 * (a header seen before the channel count is known). The first check with
 * channels > 0 that passes calls the load's header_ok (ic_load_options). Takes uint64_t so that
 * header fields of any width can be checked before they are narrowed to int. */
ic_status ic_io_check_dims(uint64_t width, uint64_t height, int channels, const ic_io_limits *lim,
                           char *err, size_t errlen);
/* ic_io_check_dims for an image of `type` samples (IC_U16: twice the bytes,
 * for the decoded image and for the converted copy). */
ic_status ic_io_check_dims_type(uint64_t width, uint64_t height, int channels, ic_sample_type type,
                                const ic_io_limits *lim, char *err, size_t errlen);

/* io_util.c. For a reader whose samples are deflate-coded: IC_ERR_FORMAT
 * ("truncated WHAT data ...") when the whole of f, a seekable stream, is
 * too short to hold raw_bytes of samples even at deflate's best ratio, so
 * that a cut file declaring a huge image is refused before the image is
 * allocated and decoded. f's position is kept. Not checked under
 * ic_image_probe, which may see only the start of the file. */
ic_status ic_io_check_room(FILE *f, uint64_t raw_bytes, const ic_io_limits *lim, const char *what,
                           char *err, size_t errlen);

/* Converts `width` interleaved pixels of src_ch channels into dst_ch channels
 * (1..4 each; 2 and 4 have alpha last). Grey -> colour replicates the grey;
 * colour -> grey uses the Rec.601 luma Y = (299 R + 587 G + 114 B + 500) / 1000;
 * a missing alpha becomes 255 (opaque); a dropped alpha is discarded.
 * src and dst must not overlap. This is seed 004's channel_force. */
void ic_io_convert_row(uint8_t *dst, int dst_ch, const uint8_t *src, int src_ch, int width);
/* The same on 16-bit samples (a missing alpha becomes 65535). */
void ic_io_convert_row16(uint16_t *dst, int dst_ch, const uint16_t *src, int src_ch, int width);
/* ic_io_convert_row or ic_io_convert_row16 by `type` (rows of that type). */
void ic_io_convert_row_type(void *dst, int dst_ch, const void *src, int src_ch, int width,
                            ic_sample_type type);

/* 16-bit samples on disk are big-endian (PNG, PNM): n samples of a host-order
 * row to big-endian bytes at dst, and n big-endian samples at src (bytes) to
 * host order at dst (src and dst may be the same buffer). */
void ic_io_be16_store(uint8_t *dst, const uint16_t *src, size_t n);
void ic_io_be16_load(uint16_t *dst, const uint8_t *src, size_t n);

/* Readers. Each reads one image from f (positioned at the start of the data,
 * seekable: a file or an fmemopen'd buffer) into *img, created by
 * ic_image_create_type as IC_AOS with the channel count the file stores (after
 * expanding palettes and bit depths below 8) and IC_U16 samples where the
 * file stores more than 8 bits (PNG, PNM, TIFF), calling ic_io_check_dims with lim before
 * allocating it. meta (NULL when not wanted; zeroed by the caller) receives
 * the ICC profile and EXIF block where the format has them; io.c frees it on
 * error. On error *img is zeroed and err holds one line. A new format is one
 * more reader here and one line in io.c's format table. */
ic_status ic_pnm_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen);
ic_status ic_png_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen);
ic_status ic_jpeg_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen);
ic_status ic_tiff_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen);
ic_status ic_webp_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen);
/* PFM (pfm.c): IC_F32 grey or RGB. NumPy .npy (npy.c): IC_U8, IC_U16 or
 * IC_F32 of 1..4 channels, as stored. */
ic_status ic_pfm_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen);
ic_status ic_npy_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen);

/* The JPEG decoder's verdict without its pixels (jpeg.c), for files another
 * decoder (nvJPEG) turns into pixels: the header, the limits and all of the
 * entropy-coded data go through libjpeg-turbo under ic_jpeg_read's strict
 * error manager (the coefficients are decoded and thrown away: no IDCT,
 * upsampling or colour conversion but for the last row), unless a walk of
 * the Huffman codes proves them clean first (ic_jpeg_scan_clean; the
 * environment's IC_JPEG_CHECK_WALK=0 turns it off). Returns IC_OK, or
 * the status and, in err, the message ic_jpeg_read gives the same bytes
 * when the failure lies in the header, the limits or the entropy-coded data
 * (a cut file, a corrupt Huffman code, data that ends early: JWRN_HIT_MARKER,
 * ...). Colour conversion is not tried: a file that only the conversion
 * refuses passes here. */
ic_status ic_jpeg_check(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                        size_t errlen);
/* ic_jpeg_check without the quick proof first (ic_jpeg_scan_clean): always
 * libjpeg-turbo's decode. For tests that hold the two to one verdict. */
ic_status ic_jpeg_check_decode(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                               size_t errlen);

/* jpeg_scan.c: 1 when the bytes are a baseline 3-component JPEG whose
 * header libjpeg-turbo reads without a word and within lim, and whose
 * entropy-coded data is proven clean by a walk of its Huffman codes (every
 * code valid, every run inside its block, each interval ending in its last
 * byte before the expected RSTn, EOI after the scan): ic_jpeg_check's
 * verdict is then IC_OK without decoding. 0 proves nothing. */
int ic_jpeg_scan_clean(const uint8_t *data, size_t n, const ic_io_limits *lim);

/* ic_jpeg_check over a batch on up to one host thread per core, at most
 * IC_JPEG_CHECK_THREADS (jpeg_check.c), started before and collected after other work (the GPU
 * decode of the same files), so that the check does not add to its time.
 * ic_jpeg_checks_start checks data[i] (len[i] bytes) for each i < n with
 * todo[i] != 0, with the limits *lim; the buffers must stay until the wait.
 * ic_jpeg_checks_wait lends the calling thread to what is left, joins, sets
 * pass[i] = 0 for each refused file (the others are left alone) and
 * releases everything; it must follow every start. When the start cannot
 * allocate, the wait sets pass[i] = 0 for every file checked: they take the
 * CPU decoder, which then gives the verdict. */
#define IC_JPEG_CHECK_THREADS 64
typedef struct ic_jpeg_checks ic_jpeg_checks;
ic_jpeg_checks *ic_jpeg_checks_start(int n, const uint8_t *const *data, const size_t *len,
                                     const int *todo, const ic_io_limits *lim);
void ic_jpeg_checks_wait(ic_jpeg_checks *k, int n, const int *todo, int *pass);

/* Metadata (metadata.c). Replaces *dst with a copy of n bytes at src; leaves
 * it empty for n == 0 or n > IC_MAX_METADATA (not carried). IC_ERR_NOMEM. */
ic_status ic_io_meta_copy(uint8_t **dst, size_t *dst_size, const void *src, size_t n);

/* 1 when m's ICC profile is for the colour space of out_ch channels (RGB for
 * 3 and 4, GRAY for 1 and 2); 0 without a profile. */
int ic_io_icc_fits(const ic_metadata *m, int out_ch);

/* Writers. img is IC_AOS (any pitch) with 1..4 channels, IC_U8 or (PNG, PNM,
 * TIFF only: io.c converts for the others) IC_U16 samples; out_ch is the channel
 * count to store (pnm: 1 or 3, jpeg: 1 or 3, png and tiff: 1..4, webp: 3 or 4),
 * converted row by row
 * with ic_io_convert_row when it differs from img->channels. meta is NULL or
 * what to embed (io.c has dropped a profile that does not fit out_ch); level
 * is the zlib level 1..9 of PNG and TIFF; PNG's threads are
 * ic_png_deflate_opts.threads (ic_save_options.threads). They
 * write to f and do not flush or close it; io.c checks the stream afterwards. */
ic_status ic_pnm_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen);
/* PFM takes IC_F32 images (out_ch 1 or 3), npy any type as it is (io.c
 * converts for PFM). */
ic_status ic_pfm_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen);
ic_status ic_npy_write(FILE *f, const ic_image *img, char *err, size_t errlen);
ic_status ic_png_write(FILE *f, const ic_image *img, int out_ch, int level, int threads,
                       const ic_metadata *meta, char *err, size_t errlen);
/* How ic_jpeg_write may use threads (NULL: one thread, no restart markers).
 * With threads > 1 an image of 1 MP or more is coded in horizontal strips
 * (cut by its size alone: the file is the same for every threads > 1) on up
 * to that many threads and written as one JPEG with a restart marker
 * between strips (jpeg.c): it decodes to the pixels of the one-thread file.
 * It falls back to one thread when memory for the strips or every helper
 * thread cannot be had; a libjpeg error in a strip fails the write with
 * that strip's message. The other fields are for tests (zero otherwise). */
typedef struct ic_jpeg_strips {
    int threads; /* at most this many threads, the caller's included; 0, 1: one */
    /* Nonzero: strips of this many rows (a multiple of the MCU height, 16
     * rows for colour, 8 for grey), whatever the image's size. */
    int strip_rows;
    /* One thread only: libjpeg's own restart markers every this many MCU
     * rows (the file that strips of that height must give). */
    int restart_mcu_rows;
    /* 0: up to threads - 1 helper threads; n > 0: at most n; -1: none can
     * be started. */
    int max_helpers;
    /* n > 0: strip n - 1 fails as on a libjpeg error; -n: as when libjpeg
     * runs out of memory. */
    int fail_strip;
} ic_jpeg_strips;
ic_status ic_jpeg_write(FILE *f, const ic_image *img, int out_ch, int quality,
                        const ic_metadata *meta, const ic_jpeg_strips *strips, char *err,
                        size_t errlen);
ic_status ic_tiff_write(FILE *f, const ic_image *img, int out_ch, int level,
                        const ic_metadata *meta, char *err, size_t errlen);
ic_status ic_webp_write(FILE *f, const ic_image *img, int out_ch, int quality, int lossless,
                        const ic_metadata *meta, char *err, size_t errlen);

/* The PNG writer on libdeflate and zlib (png_deflate.c; IC_HAVE_LIBDEFLATE
 * only). Filters: one of PNG's five for every row; ADAPTIVE, per row the one
 * whose bytes have the least sum of absolute values (read as signed); TRIAL,
 * for the whole image the one of NONE, SUB, UP, AVG, PAETH and ADAPTIVE
 * whose filtered sample of the rows (every 256th band of 16) has the least
 * order-0 entropy. Coders: LIBDEFLATE at `level`; RLE, zlib's Z_RLE strategy
 * (Huffman codes and runs only: on noisy photographs smaller than any
 * libdeflate level short of near-optimal parsing, at several times the
 * speed); AUTO, the one of RLE with that filter, LIBDEFLATE with it and
 * LIBDEFLATE with UP whose sample compresses smallest. */
typedef enum ic_png_filter {
    IC_PNG_FILTER_NONE = 0,
    IC_PNG_FILTER_SUB = 1,
    IC_PNG_FILTER_UP = 2,
    IC_PNG_FILTER_AVG = 3,
    IC_PNG_FILTER_PAETH = 4,
    IC_PNG_FILTER_ADAPTIVE = 5,
    IC_PNG_FILTER_TRIAL = 6,
    IC_PNG_FILTER_QUICK = 7 /* TRIAL among UP, SUB and PAETH, on every 4th band */
} ic_png_filter;
typedef enum ic_png_coder {
    IC_PNG_CODER_LIBDEFLATE = 0,
    IC_PNG_CODER_RLE = 1,
    IC_PNG_CODER_AUTO = 2,
    IC_PNG_CODER_HUFFMAN = 3, /* Huffman codes alone (png_huffman.c) */
    /* HUFFMAN, or RLE where over a quarter of the filtered sample is 0 */
    IC_PNG_CODER_FAST = 4
} ic_png_coder;
typedef struct ic_png_deflate_opts {
    int level;            /* libdeflate level 0..12 */
    ic_png_filter filter; /* row filters */
    ic_png_coder coder;   /* who compresses the filtered rows */
    /* Threads filtering and deflating row strips (png_strips.c), the
     * caller's included; 0 and 1: one. The file is the same for any. */
    int threads;
    int strip_rows; /* tests: strips of this many rows; 0: by the image's size */
} ic_png_deflate_opts;
/* The setting of --compression level (1..9; docs/definitions.md#png-writer has the table). */
void ic_png_deflate_setting(int level, ic_png_deflate_opts *o);
/* Writes img (IC_U8 or IC_U16, IC_AOS, any pitch) as a PNG of out_ch (1..4)
 * channels at 8 or 16 bits to f, with meta's ICC profile (iCCP, when
 * ic_png_icc_acceptable) and EXIF (eXIf). Does not flush f. Errors through
 * ic_fail: IC_ERR_NOMEM, IC_ERR_IO, IC_ERR_INVALID_ARG, IC_ERR_INTERNAL. */
ic_status ic_png_deflate_write(FILE *f, const ic_image *img, int out_ch,
                               const ic_png_deflate_opts *o, const ic_metadata *meta);
/* Row strips (png_strips.c). A job: `bytes` filtered bytes at data, rows of
 * row_bytes (type byte included), deflated by `coder` (LIBDEFLATE at
 * `level`, RLE or HUFFMAN) on up to `threads` threads. With `fill`, data
 * is NULL and each strip's bytes are made just before it is deflated:
 * fill(fill_arg, strip, dst, worker) writes them to dst, a buffer of the
 * worker's (workers 0..threads-1), so that a strip is deflated while it
 * is still in the cache and the whole filtered image is never held. */
#define IC_PNG_MAX_THREADS 256
typedef struct ic_png_strip_job {
    const uint8_t *data;
    size_t bytes, row_bytes;
    ic_png_coder coder;
    int level, threads, strip_rows;
    void (*fill)(void *arg, int strip, uint8_t *dst, int worker);
    void *fill_arg;
    const struct ic_png_huffman_code *code; /* HUFFMAN: the image's code, or NULL */
} ic_png_strip_job;
/* The rows of a strip (the last may have fewer): strip_rows when > 0, else
 * by the row size and the coder alone. One strip: one stream, no strips. */
size_t ic_png_strip_rows(size_t row_bytes, ic_png_coder coder, int strip_rows);
/* Bytes of a zlib stream held in pieces, read one after the other. */
typedef struct ic_png_piece {
    const uint8_t *p;
    size_t n;
} ic_png_piece;
/* The zlib stream of the job, strip after strip: *zn bytes in the *count
 * pieces of *pieces (malloc'd), which lie in *z (malloc'd; the strips stay
 * where they were deflated rather than being moved together), and where
 * each strip starts in the stream in *starts (malloc'd, one offset a
 * strip). Each strip inflates alone. Errors through ic_fail: IC_ERR_NOMEM,
 * IC_ERR_INTERNAL. */
ic_status ic_png_deflate_strips(const ic_png_strip_job *j, uint8_t **z, ic_png_piece **pieces,
                                int *count, size_t *zn, uint64_t **starts);
/* The icST chunk (ancillary, private, unsafe to copy: it describes the
 * IDAT data), written before the first IDAT of a file whose stream is in
 * strips (png_deflate.c) and read by png_inflate_strips.c: per strip, its
 * first row (4 bytes) and the offset of its first byte in the IDAT data,
 * the zlib header counted (8 bytes), big-endian. Each strip inflates alone
 * and its first row's filter (NONE or SUB) does not look up. */
#define IC_PNG_STRIPS_CHUNK "icST"
#define IC_PNG_STRIPS_ENTRY 12
/* The fast mode's coder (png_huffman.c): in[0..n) as raw deflate of
 * Huffman codes alone into out, ending with the final block when `last`,
 * else with an empty stored block (on a byte boundary, to be continued).
 * Returns the size, 0 when room < ic_png_huffman_bound(n). */
size_t ic_png_huffman_deflate(const uint8_t *in, size_t n, int last, uint8_t *out, size_t room);
size_t ic_png_huffman_bound(size_t n);
/* One Huffman code for a whole image (png_huffman.c), made from the byte
 * counts of a sample of its filtered rows, so that no strip counts its
 * bytes: every byte has a code of at most 12 bits. NULL: out of memory. */
typedef struct ic_png_huffman_code ic_png_huffman_code;
ic_png_huffman_code *ic_png_huffman_code_make(const uint64_t *hist);
void ic_png_huffman_code_free(ic_png_huffman_code *c);
/* ic_png_huffman_deflate by code c, in one block: the same kind of stream
 * (the block coder's where c would make it larger than stored). */
size_t ic_png_huffman_deflate_code(const ic_png_huffman_code *c, const uint8_t *in, size_t n,
                                   int last, uint8_t *out, size_t room);
/* Walks the raw deflate stream s[0..n) (png_blocks.c): 1 with the bit
 * position of its final block's header in *header and of its end in *end,
 * 0 when it is not one whole stream or memory is short. */
int ic_deflate_final_block(const uint8_t *s, size_t n, uint64_t *header, size_t *end);
/* Runs fn(arg, item, worker) for every item in 0..count-1 on up to
 * `threads` threads (the caller's is worker 0; workers are 0..threads-1),
 * fewer when threads cannot be started; returns when all are done. */
void ic_png_parallel_for(int threads, int count, void (*fn)(void *arg, int item, int worker),
                         void *arg);
/* The fast PNG reader's pixels (png_inflate.c). ic_png_unfilter_row undoes
 * filter `type` (0..4) of a row of n bytes at raw into dst (dst may be raw),
 * given the row above as unfiltered bytes at prev (zeros for the first row)
 * and bpp bytes per pixel (1..8), with the instruction set isa
 * (IC_PNG_ISA_*: each can be tested; ic_png_unfilter_isa_best is this CPU's
 * fastest); 0 for a type over 4. ic_png_inflate_image (IC_HAVE_LIBDEFLATE
 * only) inflates the zlib stream z[0..zn) in one call into the
 * ic_png_inflated_size(img) bytes of img's filtered rows and unfilters them
 * into img (created: IC_AOS, IC_U8 or IC_U16, 16-bit samples turned from
 * big-endian to host order); 0, with img partly written, when the stream
 * does not hold exactly that many bytes, is corrupt, declares a window that
 * zlib would find too small, has a row filter over 4 or memory is short. */
enum { IC_PNG_ISA_SCALAR = 0, IC_PNG_ISA_SSE2 = 1 };
int ic_png_unfilter_isa_best(void);
int ic_png_unfilter_row(uint8_t *dst, const uint8_t *raw, const uint8_t *prev, size_t n, size_t bpp,
                        int type, int isa);
size_t ic_png_inflated_size(const ic_image *img);
int ic_png_inflate_image(const uint8_t *z, size_t zn, ic_image *img, int isa);
/* 1 when the zlib header of z[0..zn) is one that zlib accepts for a stream
 * of `total` bytes (method, window, check bits, no preset dictionary). */
int ic_png_zlib_header_ok(const uint8_t *z, size_t zn, size_t total);
/* ic_png_inflate_image on up to `threads` threads for a stream in strips
 * that map[0..mapn) (an icST chunk's data) describes (png_inflate_strips.c):
 * 1 with img written as ic_png_inflate_image writes it; 0, img partly
 * written, when the map or the stream fails any check (ic_png_inflate_image
 * then decides), or memory is short. */
int ic_png_inflate_strips(const uint8_t *z, size_t zn, const uint8_t *map, size_t mapn,
                          ic_image *img, int threads, int isa);
/* ic_png_read choosing its path (tests): IC_PNG_PATH_AUTO is ic_png_read;
 * LIBPNG decodes with libpng alone; FAST takes the fast path or fails with
 * IC_ERR_UNSUPPORTED where ic_png_read would fall back to libpng. */
typedef enum ic_png_path {
    IC_PNG_PATH_AUTO = 0,
    IC_PNG_PATH_LIBPNG = 1,
    IC_PNG_PATH_FAST = 2
} ic_png_path;
ic_status ic_png_read_path(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                           ic_png_path path, char *err, size_t errlen);

/* 1 when an ICC profile of n bytes passes the header checks libpng makes
 * before writing an iCCP chunk (length field, 'acsp', D50 illuminant). */
int ic_png_icc_acceptable(const uint8_t *icc, size_t n);

/* JPEG metadata apart from pixels (jpeg.c, jpeg_meta.c), for the GPU codec,
 * whose nvJPEG neither reads nor writes it. ic_jpeg_read_metadata: the ICC
 * profile and EXIF of a JPEG in memory, as ic_jpeg_read finds them, from its
 * header only (*meta zeroed first; free with ic_metadata_free; errors through
 * ic_fail, *meta then empty). ic_jpeg_metadata_size: the bytes of the
 * segments ic_jpeg_add_metadata inserts for meta on a JPEG of `channels`
 * (1 or 3) channels (0: nothing to insert). ic_jpeg_add_metadata: inserts
 * them into the n bytes of a JPEG at *buf (capacity *cap, malloc'd; grown with
 * realloc when needed) right after SOI and a JFIF APP0 that follows it: APP1
 * "Exif\0\0" (EXIF up to 65527 bytes), then APP2 "ICC_PROFILE\0" chunks
 * of at most 65519 bytes (a profile that fits the channels, up to 255
 * chunks). Errors through ic_fail: IC_ERR_NOMEM, IC_ERR_INTERNAL (no SOI). */
ic_status ic_jpeg_read_metadata(const uint8_t *data, size_t n, ic_metadata *meta);
size_t ic_jpeg_metadata_size(const ic_metadata *meta, int channels);
ic_status ic_jpeg_add_metadata(uint8_t **buf, size_t *cap, size_t *n, const ic_metadata *meta,
                               int channels);

/* An output file being written (atomic.c): f receives the data; ic_out_commit
 * makes it appear at `path` complete (replacing any file there atomically,
 * or, with no_replace, failing when anything is there, a dangling link
 * included), ic_out_abort discards it. A replaced regular file passes its
 * mode on to the new one, and its owner where the process may set it.
 * Nothing is ever visible at `path` before commit, and the temporary is
 * removed on failure, on abort and by ic_image_save_cleanup. */
#define IC_IO_PATH_MAX 4096
typedef struct ic_out_file {
    FILE *f;
    int fd;
    int anon;       /* 1: an O_TMPFILE file without a name until commit */
    int slot;       /* its entry in the table of temporaries, or -1 */
    int no_replace; /* 1: commit fails when `path` exists */
    const char *path;
    char dir[IC_IO_PATH_MAX];
    char tmp[IC_IO_PATH_MAX + 256];
} ic_out_file;

/* Creates the hidden file in path's directory. On error err holds one line
 * and nothing is left behind. */
ic_status ic_out_open(ic_out_file *o, const char *path, int no_replace, char *err, size_t errlen);
/* Flushes, syncs and publishes; on error removes the temporary. Closes f.
 * With no_replace, anything at `path` makes it IC_ERR_IO ("the output
 * exists ..."). */
ic_status ic_out_commit(ic_out_file *o, char *err, size_t errlen);
/* Closes and removes the temporary. */
void ic_out_abort(ic_out_file *o);

#endif /* IC_IO_INTERNAL_H */
