/*
 * png.c - PNG files through libpng, for untrusted input.
 *
 * Reading expands palettes, grey below 8 bits and tRNS transparency to
 * grey, grey+alpha, RGB or RGBA (1..4 channels as stored), 8-bit, or 16-bit
 * (IC_U16, host byte order) for 16-bit files. Errors longjmp out of libpng and become one-line messages;
 * libpng's user limits bound each side, its chunk allocation limit bounds
 * ancillary chunks, and width*height is checked against the pixel limit right
 * after the header and the decoded bytes against the memory limit before the
 * image is allocated. Non-interlaced 8- and 16-bit grey, grey+alpha, RGB
 * and RGBA files without tRNS take a faster path where built with libdeflate:
 * libpng still reads and checks every chunk, but hands over the IDAT data
 * (a chunk callback), which png_inflate.c inflates in one call and unfilters
 * (png_inflate_strips.c strip by strip on ic_io_limits.threads, where an
 * icST chunk before the IDATs says where the writer's strips begin);
 * whatever that path refuses (a corrupt or odd stream, too little memory) is
 * read again from the start by libpng alone, which gives today's verdict.
 * Writing stores 1..4 channels at 8 or 16 bits (the
 * image's type; PNG itself is big-endian): through png_deflate.c (libdeflate
 * and zlib, on several threads) when built with IC_HAVE_LIBDEFLATE, else
 * through libpng and zlib on one.
 * Built only with IC_HAVE_PNG; otherwise every entry point reports
 * IC_ERR_UNSUPPORTED. (No seed figure: seed 004 loads files through a library.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "core/image_internal.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_PNG

#include <png.h>
#include <setjmp.h>

/* Largest ancillary chunk libpng may allocate (ICC profiles, text). */
#define PNG_CHUNK_MALLOC_MAX ((png_alloc_size_t)16 << 20)
/* Largest single allocation libpng may make at all. Its own buffers are rows
 * (at most 8 bytes x IC_MAX_DIM + 1) and chunk data; the image is ours. The
 * chunk limit above does not cover every chunk (libpng 1.6.39 allocates a
 * tEXt chunk of whatever length the file claims: a 94-byte file made it map
 * 1.9 GB), so the allocator enforces this bound; libpng then skips the chunk
 * or fails with a message. */
#define PNG_MALLOC_MAX ((png_alloc_size_t)32 << 20)

#define CHUNK_IDAT 0x49444154u /* "IDAT" as png_get_io_chunk_type gives it */

static png_voidp bounded_malloc(png_structp png, png_alloc_size_t size)
{
    (void)png;
    return size <= PNG_MALLOC_MAX ? malloc(size) : NULL;
}

static void bounded_free(png_structp png, png_voidp p)
{
    (void)png;
    free(p);
}

/* State shared with libpng's callbacks; lives in the caller of the function
 * that calls setjmp, so it stays valid after the longjmp. */
/* The fast path's IDAT stream, gathered by on_chunk. */
typedef struct png_fast {
    uint8_t *z;
    size_t zn, cap;
    uint64_t room;  /* the most bytes z may take (memory limit, deflate's overhead) */
    uint64_t hint;  /* the bytes from the signature to the end of the stream, or 0 */
    int started;    /* room is set */
    int seen_idat;  /* read_fn has read IDAT data */
    int split;      /* another chunk followed an IDAT: libpng reads only the first run */
    png_infop info; /* the header, for on_chunk */
    uint8_t *map;   /* the icST chunk's data, when one came before the IDATs */
    size_t mapn;
    int maps; /* icST chunks seen */
} png_fast;

typedef struct png_io {
    FILE *f;
    png_fast *fast;          /* reading: NULL unless on the fast path */
    png_infop info;          /* reading: to see the header as soon as it is parsed */
    const ic_io_limits *lim; /* reading: the limits */
    ic_status dims;          /* reading: result of the early size check */
    char *err;               /* reading: where the size check writes its message */
    size_t errlen;
    int too_large; /* libpng warned that a side exceeds the user limit */
    int truncated; /* the file ended early */
    int sys_errno; /* a read/write error of the stream */
    char msg[200]; /* libpng's error message */
} png_io;

static void on_error(png_structp png, png_const_charp msg)
{
    png_io *io = png_get_error_ptr(png);
    snprintf(io->msg, sizeof io->msg, "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    png_io *io = png_get_error_ptr(png);
    /* png_check_IHDR warns "Image width/height exceeds user limit in IHDR"
     * and then fails with "Invalid IHDR data": remember the real reason. */
    if (msg && strstr(msg, "exceeds user limit"))
        io->too_large = 1;
}

static void read_fn(png_structp png, png_bytep data, size_t len)
{
    png_io *io = png_get_io_ptr(png);
    /* IHDR is the first chunk, and libpng records it once its CRC has been
     * checked: the first read after that checks the pixel limit, so that a
     * header claiming a huge image fails here, before libpng reads on to the
     * first IDAT and before anything is allocated for the pixels. */
    if (io->info && io->dims == IC_OK && png_get_image_width(png, io->info) != 0) {
        io->dims =
            ic_io_check_dims(png_get_image_width(png, io->info),
                             png_get_image_height(png, io->info), 0, io->lim, io->err, io->errlen);
        if (io->dims != IC_OK)
            png_error(png, "image too large");
        io->info = NULL; /* checked once */
    }
    if (io->fast) {
        /* The chunk being read (during a header read still the one before). */
        if (png_get_io_chunk_type(png) == CHUNK_IDAT)
            io->fast->seen_idat = 1;
        else if (io->fast->seen_idat)
            io->fast->split = 1;
    }
    if (fread(data, 1, len, io->f) == len) {
        /* libpng would not hand over an IDAT chunk over its chunk limit but
         * read it through and fail: leave such a file to libpng at once. */
        if (io->fast && len == 8 && memcmp(data + 4, "IDAT", 4) == 0 &&
            (png_get_io_state(png) & PNG_IO_MASK_LOC) == PNG_IO_CHUNK_HDR &&
            png_get_uint_32(data) > PNG_CHUNK_MALLOC_MAX)
            png_error(png, "IDAT chunk over the fast path's limit");
        return;
    }
    if (ferror(io->f)) {
        io->sys_errno = errno ? errno : EIO;
        png_error(png, "read error");
    }
    io->truncated = 1;
    png_error(png, "truncated PNG data");
}

#ifndef IC_HAVE_LIBDEFLATE /* otherwise png_deflate.c writes PNG files */
static void write_fn(png_structp png, png_bytep data, size_t len)
{
    png_io *io = png_get_io_ptr(png);
    if (fwrite(data, 1, len, io->f) != len) {
        io->sys_errno = errno ? errno : EIO;
        png_error(png, "write error");
    }
}

static void flush_fn(png_structp png)
{
    png_io *io = png_get_io_ptr(png);
    if (fflush(io->f) != 0) {
        io->sys_errno = errno ? errno : EIO;
        png_error(png, "write error");
    }
}
#endif

/* Turns what the callbacks recorded into a status and a message. */
static ic_status png_failure(const png_io *io, uint64_t side_limit, uint64_t max_pixels,
                             const char *verb, char *err, size_t errlen)
{
    if (io->dims != IC_OK)
        return io->dims; /* the message is already in err */
    if (io->too_large) {
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE,
                       "PNG image exceeds the size limit (%llu pixels per side, %llu in all; "
                       "--max-pixels)",
                       (unsigned long long)side_limit, (unsigned long long)max_pixels);
    }
    if (io->sys_errno) {
        return ic_errf(err, errlen, IC_ERR_IO, "%s error: %s", verb, strerror(io->sys_errno));
    }
    if (io->truncated) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "truncated PNG data");
    }
    if (strstr(io->msg, "ut of memory") || strstr(io->msg, "nsufficient memory")) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "PNG: %s", io->msg);
    }
    return ic_errf(err, errlen, IC_ERR_FORMAT, "PNG: %s", io->msg);
}

/* Everything between setjmp and the end of decoding; *rows_out lets the
 * caller free the row table whatever happens. */
/* The iCCP profile and eXIf block libpng kept in info (both checked by it). */
static ic_status png_get_metadata(png_structp png, png_infop info, ic_metadata *meta)
{
    png_charp name = NULL;
    int method = 0;
    png_bytep profile = NULL;
    png_uint_32 plen = 0;
    ic_status st = IC_OK;
    if (png_get_iCCP(png, info, &name, &method, &profile, &plen) && profile)
        st = ic_io_meta_copy(&meta->icc, &meta->icc_size, profile, plen);
#ifdef PNG_eXIf_SUPPORTED
    png_bytep exif = NULL;
    png_uint_32 elen = 0;
    if (st == IC_OK && png_get_eXIf_1(png, info, &elen, &exif) && exif)
        st = ic_io_meta_copy(&meta->exif, &meta->exif_size, exif, elen);
#endif
    return st;
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* The decoded image, once its size passes the limits (both read paths);
 * `unzeroed` for a reader that writes every row. */
static ic_status image_alloc(ic_image *img, png_uint_32 w, png_uint_32 h, int channels,
                             ic_sample_type type, const ic_io_limits *lim, int unzeroed, char *err,
                             size_t errlen)
{
    ic_status st = ic_io_check_dims_type(w, h, channels, type, lim, err, errlen);
    if (st != IC_OK)
        return st;
    st = unzeroed ? ic__image_create_unzeroed(img, (int)w, (int)h, channels, IC_AOS, type)
                  : ic_image_create_type(img, (int)w, (int)h, channels, IC_AOS, type);
    if (st != IC_OK)
        return ic_errf(err, errlen, st, "cannot allocate a %ux%u image: %s", (unsigned)w,
                       (unsigned)h, ic_status_str(st));
    return IC_OK;
}

#ifdef IC_HAVE_LIBDEFLATE
/* The bytes the fast path's IDAT stream may take, 0 when the image is not
 * one it reads: the memory limit less the image (and the converted copy, as
 * ic_io_check_dims_type counts them) and the inflated rows, and at most the
 * rows plus an eighth (more is a stream libpng had better judge). */
static uint64_t fast_room(png_structp png, png_infop info, const ic_io_limits *lim)
{
    const int colour = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    if ((depth != 8 && depth != 16) || (colour & PNG_COLOR_MASK_PALETTE) ||
        png_get_interlace_type(png, info) != PNG_INTERLACE_NONE ||
        png_get_valid(png, info, PNG_INFO_tRNS))
        return 0;
    /* Sides are at most IC_MAX_DIM here (read_fn's check): no overflow. */
    const uint64_t px = (uint64_t)png_get_image_width(png, info) * png_get_image_height(png, info);
    const uint64_t es = (uint64_t)depth / 8u;
    uint64_t need = px * png_get_channels(png, info) * es;
    if (lim->convert_channels > 0)
        need += px * (uint64_t)lim->convert_channels * es;
    const uint64_t rows =
        (uint64_t)png_get_image_height(png, info) * (png_get_rowbytes(png, info) + 1u);
    need += rows;
    if (need >= lim->max_memory)
        return 0;
    const uint64_t most = rows + rows / 8u + 4096u;
    return lim->max_memory - need < most ? lim->max_memory - need : most;
}

/* libpng's unknown chunks on the fast path, IDAT among them (its CRC
 * checked): IDAT data is appended to the stream, other ancillary chunks are
 * dropped as libpng drops them, a critical one is left to libpng to refuse.
 * -1 fails the read (libpng then reads the file alone): an image the fast
 * path does not read, IDAT after another chunk, too much data or memory. */
static int on_chunk(png_structp png, png_unknown_chunkp chunk)
{
    png_io *io = png_get_user_chunk_ptr(png);
    png_fast *fs = io->fast;
    if (memcmp(chunk->name, IC_PNG_STRIPS_CHUNK, 4) == 0) {
        /* Kept only as the one icST before the IDATs; a hint either way. */
        if (++fs->maps == 1 && !fs->seen_idat && chunk->size > 0 &&
            (fs->map = malloc(chunk->size)) != NULL) {
            memcpy(fs->map, chunk->data, chunk->size);
            fs->mapn = chunk->size;
        }
        return 1;
    }
    if (memcmp(chunk->name, "IDAT", 4) != 0)
        return (chunk->name[0] & 0x20) ? 1 : 0;
    if (fs->split)
        return -1;
    if (!fs->started) {
        fs->room = fast_room(png, fs->info, io->lim);
        fs->started = 1;
    }
    if (chunk->size > fs->room - fs->zn)
        return -1;
    if (chunk->size > fs->cap - fs->zn) {
        /* The whole rest of the file at once, where it is known. */
        size_t cap = fs->cap ? fs->cap * 2 : fs->hint ? (size_t)fs->hint : (size_t)1 << 20;
        if (cap < fs->zn + chunk->size)
            cap = fs->zn + chunk->size;
        if (cap > fs->room)
            cap = (size_t)fs->room;
        uint8_t *z = realloc(fs->z, cap);
        if (!z)
            return -1;
        if (!fs->z)
            ic__huge_pages(z, cap);
        fs->z = z;
        fs->cap = cap;
    }
    if (chunk->size)
        memcpy(fs->z + fs->zn, chunk->data, chunk->size);
    fs->zn += chunk->size;
    return 1;
}

/* The rest of png_decode on the fast path, after png_read_info (which has
 * gathered the first IDAT): the image as stored, no transformations. Any
 * refusal is IC_ERR_UNSUPPORTED: the caller reads the file again with
 * libpng alone. */
static ic_status png_decode_fast(png_structp png, png_infop info, png_io *io, ic_image *img,
                                 const ic_io_limits *lim, ic_metadata *meta, char *err,
                                 size_t errlen)
{
    if (!io->fast->started || io->fast->room == 0)
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "PNG: not for the fast path");
    const png_uint_32 w = png_get_image_width(png, info);
    const png_uint_32 h = png_get_image_height(png, info);
    const int channels = png_get_channels(png, info);
    const ic_sample_type type = png_get_bit_depth(png, info) == 16 ? IC_U16 : IC_U8;
    /* Pages first touched by the threads that write them. */
    ic_status st = image_alloc(img, w, h, channels, type, lim, 1, err, errlen);
    if (st != IC_OK)
        return st;
    /* Every chunk up to IEND, the IDAT run through on_chunk. */
    png_read_end(png, info);
    const png_fast *fs = io->fast;
    const int isa = ic_png_unfilter_isa_best();
    if (!(fs->maps == 1 &&
          ic_png_inflate_strips(fs->z, fs->zn, fs->map, fs->mapn, img, lim->threads, isa)) &&
        !ic_png_inflate_image(fs->z, fs->zn, img, isa))
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "PNG: IDAT stream left to libpng");
    const size_t row = ic_image_row_bytes(img);
    for (int y = 0; y < img->height && img->pitch > row; y++)
        memset(img->data + (size_t)y * img->pitch + row, 0, img->pitch - row);
    if (meta && png_get_metadata(png, info, meta) != IC_OK) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    return IC_OK;
}
#endif

static ic_status png_decode(png_structp png, png_infop info, png_io *io, ic_image *img,
                            const ic_io_limits *lim, ic_metadata *meta, png_bytep **rows_out,
                            char *err, size_t errlen)
{
    const uint64_t max_pixels = lim->max_pixels;
    const uint64_t side_limit = max_pixels < IC_MAX_DIM ? max_pixels : IC_MAX_DIM;
    if (setjmp(png_jmpbuf(png)))
        return png_failure(io, side_limit, max_pixels, "read", err, errlen);

    io->info = info;
    io->lim = lim;
    io->err = err;
    io->errlen = errlen;
    png_set_read_fn(png, io, read_fn);
    png_set_user_limits(png, (png_uint_32)side_limit, (png_uint_32)side_limit);
    png_set_chunk_malloc_max(png, PNG_CHUNK_MALLOC_MAX);

#ifdef IC_HAVE_LIBDEFLATE
    if (io->fast) { /* IDAT becomes an unknown chunk: on_chunk gathers it */
        io->fast->info = info;
        png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, (png_const_bytep) "IDAT", 1);
        png_set_read_user_chunk_fn(png, io, on_chunk);
    }
#endif
    png_read_info(png, info);

    const png_uint_32 w = png_get_image_width(png, info);
    const png_uint_32 h = png_get_image_height(png, info);
    ic_status st = ic_io_check_dims(w, h, 0, lim, err, errlen);
    if (st == IC_OK) /* the samples as stored: w * h * channels * depth bits */
        st = ic_io_check_room(
            io->f,
            ((uint64_t)w * png_get_channels(png, info) * png_get_bit_depth(png, info) / 8u) * h,
            lim, "PNG", err, errlen);
    if (st != IC_OK)
        return st;

#ifdef IC_HAVE_LIBDEFLATE
    if (io->fast)
        return png_decode_fast(png, info, io, img, lim, meta, err, errlen);
#endif
    const int colour = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    if (colour == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (colour == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(png);
    if (depth == 16 && host_little_endian())
        png_set_swap(png); /* 16-bit samples in host order, as IC_U16 wants them */
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);

    const int channels = png_get_channels(png, info);
    const int out_depth = png_get_bit_depth(png, info);
    const ic_sample_type type = out_depth == 16 ? IC_U16 : IC_U8;
    if (channels < 1 || channels > 4 || (out_depth != 8 && out_depth != 16) ||
        png_get_rowbytes(png, info) != (size_t)w * (size_t)channels * (size_t)(out_depth / 8)) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL,
                       "PNG: unexpected layout after expansion (%d channels)", channels);
    }
    st = image_alloc(img, w, h, channels, type, lim, 0, err, errlen);
    if (st != IC_OK)
        return st;
    png_bytep *rows = malloc((size_t)h * sizeof *rows);
    if (!rows) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    *rows_out = rows;
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = img->data + (size_t)y * img->pitch;
    png_read_image(png, rows);
    /* Reads up to IEND, so that a file cut after its pixels is still noticed
     * and every remaining chunk CRC is checked; an eXIf after IDAT lands in info. */
    png_read_end(png, info);
    if (meta && png_get_metadata(png, info, meta) != IC_OK) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    return IC_OK;
}

/* One read of f: with libpng alone (fast NULL) or on the fast path. */
static ic_status png_read_once(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                               png_fast *fast, char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    png_io io;
    memset(&io, 0, sizeof io);
    io.f = f;
    io.fast = fast;
    png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning,
                                               NULL, bounded_malloc, bounded_free);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    png_bytep *rows = NULL;
    ic_status st = png_decode(png, info, &io, img, lim, meta, &rows, err, errlen);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    if (st != IC_OK)
        ic_image_free(img);
    return st;
}

#ifdef IC_HAVE_LIBDEFLATE
/* 1 when the header at the start of f (at `start`, where f is left) is one
 * the fast path may read: 8 or 16 bits, no palette, not interlaced; -1 when
 * f cannot be put back. The IHDR's checks are libpng's, on the read itself. */
static int fast_candidate(FILE *f, off_t start)
{
    uint8_t h[29]; /* signature, IHDR's length and type, its first 13 bytes */
    const int ok = fread(h, 1, sizeof h, f) == sizeof h && memcmp(h + 12, "IHDR", 4) == 0 &&
                   (h[24] == 8 || h[24] == 16) &&
                   (h[25] == 0 || h[25] == 2 || h[25] == 4 || h[25] == 6) && h[28] == 0;
    clearerr(f);
    return fseeko(f, start, SEEK_SET) == 0 ? ok : -1;
}
#endif

ic_status ic_png_read_path(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                           ic_png_path path, char *err, size_t errlen)
{
#ifdef IC_HAVE_LIBDEFLATE
    /* ic_image_probe stops at the header: nothing to gain there. */
    if (path != IC_PNG_PATH_LIBPNG && !(lim->hook && lim->hook->stop)) {
        const off_t start = ftello(f);
        const int candidate = start >= 0 ? fast_candidate(f, start) : 0;
        if (candidate < 0) {
            memset(img, 0, sizeof *img);
            return ic_errf(err, errlen, IC_ERR_IO, "cannot seek: %s", strerror(errno));
        }
        if (candidate) {
            png_fast fast;
            memset(&fast, 0, sizeof fast);
            if (fseeko(f, 0, SEEK_END) == 0) {
                const off_t end = ftello(f);
                fast.hint = end > start ? (uint64_t)(end - start) : 0;
            }
            if (fseeko(f, start, SEEK_SET) != 0) {
                memset(img, 0, sizeof *img);
                return ic_errf(err, errlen, IC_ERR_IO, "cannot seek: %s", strerror(errno));
            }
            ic_status st = png_read_once(f, img, lim, meta, &fast, err, errlen);
            free(fast.z);
            free(fast.map);
            if (st == IC_OK)
                return st;
            ic_metadata_free(meta);
            if (path == IC_PNG_PATH_FAST)
                return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "PNG: not read by the fast path");
            /* libpng alone from the start: its verdict, or its pixels where
             * the fast path refused a stream that libpng accepts. */
            if (fseeko(f, start, SEEK_SET) != 0)
                return ic_errf(err, errlen, IC_ERR_IO, "cannot seek: %s", strerror(errno));
            clearerr(f);
            if (err && errlen)
                err[0] = '\0';
        } else if (path == IC_PNG_PATH_FAST) {
            memset(img, 0, sizeof *img);
            return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "PNG: not for the fast path");
        }
    }
#else
    if (path == IC_PNG_PATH_FAST) {
        memset(img, 0, sizeof *img);
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "PNG: built without the fast path");
    }
#endif
    return png_read_once(f, img, lim, meta, NULL, err, errlen);
}

ic_status ic_png_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen)
{
    return ic_png_read_path(f, img, lim, meta, IC_PNG_PATH_AUTO, err, errlen);
}

#ifdef IC_HAVE_LIBDEFLATE

ic_status ic_png_write(FILE *f, const ic_image *img, int out_ch, int level, int threads,
                       const ic_metadata *meta, char *err, size_t errlen)
{
    ic_png_deflate_opts o;
    ic_png_deflate_setting(level, &o);
    o.threads = threads;
    const ic_status st = ic_png_deflate_write(f, img, out_ch, &o, meta);
    return st == IC_OK ? st : ic_errf(err, errlen, st, "%s", ic_last_error());
}

#else /* zlib through libpng */

static ic_status png_encode(png_structp png, png_infop info, png_io *io, const ic_image *img,
                            int out_ch, int level, const ic_metadata *meta, uint8_t **buf_out,
                            char *err, size_t errlen)
{
    static const int colour_of[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                     PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    if (setjmp(png_jmpbuf(png)))
        return png_failure(io, IC_MAX_DIM, (uint64_t)IC_MAX_DIM * IC_MAX_DIM, "write", err, errlen);

    png_set_write_fn(png, io, write_fn, flush_fn);
    /* libpng refuses sides over 10^6 unless told otherwise; we allow IC_MAX_DIM. */
    png_set_user_limits(png, IC_MAX_DIM, IC_MAX_DIM);
    const int wide = img->type == IC_U16;
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, wide ? 16 : 8,
                 colour_of[out_ch], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    /* zlib level 6 (libpng's default) made encoding 90% of a filter run's time;
     * the default level 2 with the SUB/PAETH filters is several times faster
     * (bench/png-speed.sh). Higher levels also try every filter. */
    png_set_compression_level(png, level);
    png_set_filter(png, PNG_FILTER_TYPE_BASE,
                   level <= 3 ? PNG_FILTER_SUB | PNG_FILTER_PAETH : PNG_ALL_FILTERS);
    if (meta && meta->icc) {
        /* libpng checks the profile, here and again in png_write_info; what it
         * dislikes (a PCS that is not D50, an sRGB profile it would rather
         * write as sRGB) becomes a warning, never a failed image. */
        png_set_benign_errors(png, 1);
        png_set_iCCP(png, info, "icc", PNG_COMPRESSION_TYPE_BASE, meta->icc,
                     (png_uint_32)meta->icc_size);
    }
#ifdef PNG_eXIf_SUPPORTED
    if (meta && meta->exif)
        png_set_eXIf_1(png, info, (png_uint_32)meta->exif_size, meta->exif);
#endif
    png_write_info(png, info);
    if (wide && host_little_endian())
        png_set_swap(png); /* our rows are host order; the file is big-endian */
    uint8_t *buf = NULL;
    if (out_ch != img->channels) {
        buf = malloc((size_t)img->width * (size_t)out_ch * ic_sample_size(img->type));
        if (!buf) {
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        *buf_out = buf;
    }
    for (int y = 0; y < img->height; y++) {
        const uint8_t *src = img->data + (size_t)y * img->pitch;
        if (buf) {
            ic_io_convert_row_type(buf, out_ch, src, img->channels, img->width, img->type);
            src = buf;
        }
        png_write_row(png, (png_const_bytep)src);
    }
    png_write_end(png, info);
    return IC_OK;
}

ic_status ic_png_write(FILE *f, const ic_image *img, int out_ch, int level, int threads,
                       const ic_metadata *meta, char *err, size_t errlen)
{
    (void)threads; /* libpng writes one stream on one thread */
    if (out_ch < 1 || out_ch > 4) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "PNG stores 1..4 channels, not %d", out_ch);
    }
    png_io io;
    memset(&io, 0, sizeof io);
    io.f = f;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    uint8_t *buf = NULL;
    ic_status st = png_encode(png, info, &io, img, out_ch, level, meta, &buf, err, errlen);
    free(buf);
    png_destroy_write_struct(&png, &info);
    return st;
}

#endif /* IC_HAVE_LIBDEFLATE */

#else /* !IC_HAVE_PNG */

ic_status ic_png_read_path(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                           ic_png_path path, char *err, size_t errlen)
{
    (void)path;
    return ic_png_read(f, img, lim, meta, err, errlen);
}

ic_status ic_png_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen)
{
    (void)f;
    (void)lim;
    (void)meta;
    if (img)
        memset(img, 0, sizeof *img);
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without PNG support");
}

ic_status ic_png_write(FILE *f, const ic_image *img, int out_ch, int level, int threads,
                       const ic_metadata *meta, char *err, size_t errlen)
{
    (void)f;
    (void)img;
    (void)out_ch;
    (void)level;
    (void)threads;
    (void)meta;
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without PNG support");
}

#endif /* IC_HAVE_PNG */
