/*
 * cli_chart.c - `imgconv --chart WxH[xC] [--seed S] OUTPUT`: writes the
 * library's deterministic test chart (ic_image_chart: gradients, hard edges,
 * fine lines, a zone plate and seeded noise), the input of the demo, the
 * README pictures and seed 004's size sweep (480p .. 8K) at any size.
 * Same size, channels and seed give the same pixels, hence the same bytes.
 */
#include <string.h>

#include "cli.h"
#include "cli_args.h"

int cli_run_chart(const cli_options *o, cli_err *e)
{
    int code = cli_check_output(o->output, NULL, e);
    if (code != CLI_EXIT_OK)
        return code;

    ic_image img;
    ic_status s = ic_image_create(&img, o->chart_w, o->chart_h, o->chart_c, IC_AOS);
    if (s != IC_OK)
        return cli_fail(e, s == IC_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_USAGE, NULL,
                        "--chart %dx%dx%d: %s", o->chart_w, o->chart_h, o->chart_c,
                        ic_status_str(s));
    s = ic_image_chart(&img, o->seed);
    if (s != IC_OK) {
        ic_image_free(&img);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot draw the chart: %s", ic_status_str(s));
    }
    ic_save_options so;
    memset(&so, 0, sizeof so);
    so.quality = o->quality;
    so.lossless = o->lossless;
    so.compression = o->compression;
    s = ic_image_save(&img, o->output, &so);
    ic_image_free(&img);
    if (s != IC_OK)
        return cli_fail(e, cli_exit_for_output(s), o->output, "%s", ic_last_error());
    return CLI_EXIT_OK;
}
