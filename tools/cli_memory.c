/*
 * cli_memory.c - one image filtered from bytes to bytes with the CLI's
 * rules (limits before decoding, metadata carried, the encoder's threads),
 * for imgconv serve; and the magic bytes of the formats.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_args.h"

ic_format cli_format_sniff(const uint8_t *b, size_t n)
{
    if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
        return IC_FMT_PNG;
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return IC_FMT_JPEG;
    if (n >= 4 && (memcmp(b, "II*\0", 4) == 0 || memcmp(b, "MM\0*", 4) == 0))
        return IC_FMT_TIFF;
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return IC_FMT_WEBP;
    if (n >= 3 && b[0] == 'P' && (b[1] == '5' || b[1] == '6') &&
        (b[2] == ' ' || b[2] == '\n' || b[2] == '\r' || b[2] == '\t'))
        return IC_FMT_PNM;
    if (n >= 3 && b[0] == 'P' && (b[1] == 'F' || b[1] == 'f') &&
        (b[2] == ' ' || b[2] == '\n' || b[2] == '\r' || b[2] == '\t'))
        return IC_FMT_PFM;
    if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
        return IC_FMT_NPY;
    return IC_FMT_UNKNOWN;
}

/* Kept memory up to this size: an HD or 12 MP image's, not a 6000x4000 one's
 * for the rest of a server's life. */
#define KEEP_MAX ((size_t)48 << 20)

void cli_keep_free(cli_keep *keep)
{
    if (!keep)
        return;
    free(keep->data);
    keep->data = NULL;
    keep->size = 0;
}

/* The output image shaped like src, in keep's memory when there is one: a
 * worker's filter writes every sample, so zeroed pages are wasted work. */
static ic_status output_create(ic_image *dst, const ic_image *src, ic_layout layout, cli_keep *keep)
{
    const size_t bytes = ic_sample_size(src->type);
    const size_t row = (size_t)src->width * (size_t)src->channels * bytes;
    const size_t pitch = layout == IC_SOA ? ((size_t)src->width * bytes + 63u) & ~(size_t)63u
                                          : (row + 63u) & ~(size_t)63u;
    const size_t rows = (size_t)src->height * (layout == IC_SOA ? (size_t)src->channels : 1u);
    if (!keep || pitch == 0 || rows > SIZE_MAX / pitch || rows * pitch > KEEP_MAX)
        return ic_image_create_type(dst, src->width, src->height, src->channels, layout, src->type);
    if (keep->size < rows * pitch) {
        cli_keep_free(keep);
        if (!(keep->data = aligned_alloc(64, rows * pitch)))
            return IC_ERR_NOMEM;
        keep->size = rows * pitch;
    }
    return ic_image_wrap_type(dst, keep->data, src->width, src->height, src->channels, layout,
                              pitch, src->type);
}

int cli_filter_memory(const cli_options *o, ic_context *ctx, int threads, const ic_kernel *k,
                      const ic_params *p, const uint8_t *in, size_t n, const char *out_name,
                      cli_keep *keep, uint8_t **out, size_t *out_size, ic_status *why, double ms[3],
                      cli_err *e)
{
    double t[4] = {cli_now_ms(), 0, 0, 0};
    *out = NULL;
    *out_size = 0;
    *why = IC_OK;
    const int channels = o->channels > 0 ? o->channels : 1;
    ic_metadata meta;
    memset(&meta, 0, sizeof meta);
    int damaged = 0;
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.channels = o->channels;
    lo.layout = o->layout;
    lo.max_pixels = cli_work_pixel_cap(o, k, channels);
    lo.max_memory = o->max_memory;
    lo.metadata = &meta;
    lo.accept_damaged = o->accept_damaged;
    lo.damaged = &damaged;
    lo.threads = threads > 1 ? threads : 1;
    ic_image src, dst;
    memset(&src, 0, sizeof src);
    memset(&dst, 0, sizeof dst);
    char buf[256] = "";
    ic_status s = cli_noted(ic_image_decode(&src, in, n, &lo), buf, sizeof buf);
    int code = CLI_EXIT_OK;
    if (s == IC_ERR_TOO_LARGE && lo.max_pixels < o->max_pixels)
        code = cli_work_refusal(o, k, channels, buf, e);
    if (code == CLI_EXIT_OK && s != IC_OK)
        code = cli_fail(e, cli_exit_for_input(s), o->input, "%s", buf[0] ? buf : ic_status_str(s));
    if (code != CLI_EXIT_OK) {
        *why = s;
        goto done;
    }
    code = cli_check_image(o, ctx, &src, k, o->input, e);
    if (code != CLI_EXIT_OK) {
        *why = IC_ERR_TOO_LARGE;
        goto done;
    }
    t[1] = cli_now_ms();
    s = output_create(&dst, &src, o->layout, keep);
    if (s != IC_OK) {
        code = cli_fail(e, CLI_EXIT_INTERNAL, o->input, "cannot allocate the output image: %s",
                        ic_status_str(s));
        *why = s;
        goto done;
    }
    s = ic_convolve(ctx, &src, &dst, k, p);
    if (s != IC_OK) {
        code = cli_fail(e, cli_exit_for_backend(s), o->input, "backend %s: %s",
                        ic_context_backend(ctx), ic_last_error());
        *why = s;
        goto done;
    }
    t[2] = cli_now_ms();
    cli_flatten_alpha(o, &dst, out_name, o->input);
    ic_save_options so;
    memset(&so, 0, sizeof so);
    so.quality = o->quality;
    so.lossless = o->lossless;
    so.compression = o->compression;
    so.metadata = &meta;
    /* the bytes are those of any count above one: two at least, as the CLI's */
    const int most = cli_save_threads(o);
    so.threads = most > 1 ? (threads > 2 ? (threads < most ? threads : most) : 2) : 1;
    s = cli_noted(ic_image_encode(&dst, out_name, &so, out, out_size), buf, sizeof buf);
    if (s != IC_OK) {
        code = cli_fail(e, cli_exit_for_output(s), o->input, "%s", buf[0] ? buf : ic_status_str(s));
        *why = s;
    }
    t[3] = cli_now_ms();
    for (int i = 0; ms && i < 3; i++)
        ms[i] = t[i + 1] - t[i];
done:
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_metadata_free(&meta);
    return code;
}
