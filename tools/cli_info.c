/*
 * cli_info.c - the listings of imgconv: --list-filters (the named kernels of
 * ic_kernel_list), --list-backends (every backend compiled in, whether it can
 * run here and why not, and which one `auto` picks), --formats and --version.
 * They print to stdout and always succeed.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#if defined(IC_HAVE_SERVE)
#include <event2/event.h>
#define IC_LIBEVENT_VERSION event_get_version()
#endif

int cli_print_filters(void)
{
    int n = 0;
    const ic_named_kernel_info *t = ic_kernel_list(&n);
    printf("Named kernels (--kernel NAME[:ARGS]; ARGS positional or key=value):\n");
    for (int i = 0; t && i < n; i++) {
        printf("  %-12s %s\n", t[i].name, t[i].summary ? t[i].summary : "");
        if (t[i].args && t[i].args[0] && strcmp(t[i].args, "(none)") != 0)
            printf("  %-12s   args: %s\n", "", t[i].args);
    }
    printf("Matrix kernels: --kernel \"1 2 1; 2 4 2; 1 2 1 / 16\" (rows split by ';',\n"
           "values by spaces or commas, optional '/ D' divisor), or --kernel-file FILE.\n");
    return CLI_EXIT_OK;
}

int cli_print_backends(void)
{
    const char *autoname = ic_backend_auto();
    int n = ic_backend_count();
    printf("Backends (--backend NAME; auto = %s here):\n", autoname ? autoname : "none");
    for (int i = 0; i < n; i++) {
        ic_backend_info info;
        memset(&info, 0, sizeof info);
        if (ic_backend_get(i, &info) != IC_OK)
            continue;
        int is_auto = autoname && strcmp(info.name, autoname) == 0;
        printf("  %-18s %-10s %s\n", info.name,
               info.usable ? (is_auto ? "yes (auto)" : "yes") : "no",
               info.summary ? info.summary : "");
        if (!info.usable)
            printf("  %-18s %-10s why not: %s\n", "", "", info.why[0] ? info.why : "unknown");
    }
    return CLI_EXIT_OK;
}

int cli_print_formats(void)
{
    printf("Image formats built in:\n");
    const ic_format fmts[] = {IC_FMT_PNM,  IC_FMT_PNG, IC_FMT_JPEG, IC_FMT_TIFF,
                              IC_FMT_WEBP, IC_FMT_PFM, IC_FMT_NPY};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
        printf("  %-5s %s\n", ic_format_name(fmts[i]), ic_format_supported(fmts[i]) ? "yes" : "no");
    return CLI_EXIT_OK;
}

int cli_print_version(void)
{
    printf("imgconv %s (library %s)\n", IC_VERSION_STRING, ic_version());
#if defined(IC_HAVE_CUDA)
    printf("CUDA backends: built in\n");
#else
    printf("CUDA backends: not built in\n");
#endif
#if defined(IC_HAVE_KISSFFT)
    printf("CPU FFT: KissFFT (large kernels on the cpu backend)\n");
#else
    printf("CPU FFT: not built in (the cpu backend sums large kernels directly)\n");
#endif
#if defined(IC_HAVE_SERVE)
    printf("serve: built in (libevent %s)\n", IC_LIBEVENT_VERSION);
#else
    printf("serve: not built in (libevent not found, or IC_SERVE=OFF)\n");
#endif
    printf("formats: pnm yes, png %s, jpeg %s, tiff %s, webp %s\n",
           ic_format_supported(IC_FMT_PNG) ? "yes" : "no",
           ic_format_supported(IC_FMT_JPEG) ? "yes" : "no",
           ic_format_supported(IC_FMT_TIFF) ? "yes" : "no",
           ic_format_supported(IC_FMT_WEBP) ? "yes" : "no");
    printf("backends:");
    int n = ic_backend_count();
    for (int i = 0; i < n; i++) {
        ic_backend_info info;
        memset(&info, 0, sizeof info);
        if (ic_backend_get(i, &info) == IC_OK)
            printf(" %s", info.name);
    }
    printf("\n");
    return CLI_EXIT_OK;
}
