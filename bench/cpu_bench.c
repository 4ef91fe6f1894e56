/*
 * cpu_bench.c - in-memory timing of one ic_convolve configuration, the
 * imgconv side of bench/run.sh cpu (OpenCV's side is bench/compare_cpu.py).
 *
 * Fills a WxH test chart (ic_image_chart), creates one context (the thread pool
 * and buffers are made once, as an application would), runs `warmup` untimed
 * calls and then `runs` timed ones, and prints one JSON line with the median
 * and the minimum wall time of ic_convolve in milliseconds. With a list of
 * thread counts (--threads 1,2) it makes one context per count and alternates
 * between them in blocks of BLOCK timed calls (after untimed calls that wake
 * the context's workers); the JSON then holds lists.
 *
 *   cpu-bench [--backend cpu] [--size 1920x1080] [--channels 3]
 *       [--layout aos|soa] [--kernel TEXT] [--threads N[,N...]] [--runs 21]
 *       [--warmup 3] [--border mirror] [--convolve] [--explain] [--dump-kernel]
 *       [--cpu-time] [--alpha independent|auto|premultiply|keep]
 *
 * Correlation is the default here, as OpenCV's filter2D computes it, and
 * --alpha independent (every channel filtered alone, as filter2D does); with 2
 * or 4 channels --alpha auto times the premultiplied path of a blur. The chart
 * is opaque, so with 2 or 4 channels its alpha is replaced by a ramp with
 * transparent and translucent parts (ic_image_chart's alpha is 255), so that
 * the premultiplied path divides everywhere as it would on a cut-out photo.
 * --dump-kernel prints "kw kh w..." (the effective weights) and exits, so that
 * the Python side builds exactly the same kernel.
 *
 * bench/run.sh cpu links this file alone against the library as
 * `cpu-bench`. The build also links every bench C file into imgconv-bench,
 * whose main() is bench/imgconv-bench.c's: main() here is weak, and that
 * driver may call ic_bench_cpu_main() (argv[1] "cpu" is skipped) for a "cpu"
 * subcommand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imgconv.h"

int ic_bench_cpu_main(int argc, char **argv);

/* Thread counts one invocation may compare (--threads 1,2), and the timed
 * calls each makes in one turn. */
#define MAX_CTX 4
#define BLOCK 3
#define BLOCK_WARM_MS 20.0

/* --cpu-time: time the calling thread's CPU time instead of wall time, which
 * ignores time the thread spent descheduled (for tuning single-threaded code
 * on a busy machine; meaningless with more than one thread). */
static clockid_t timer_clock = CLOCK_MONOTONIC;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(timer_clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: cpu-bench [--backend B] [--size WxH] [--channels C] "
            "[--layout aos|soa] [--kernel TEXT] [--threads N[,N...]] [--runs N] [--warmup N] "
            "[--border MODE] [--convolve] [--explain] [--dump-kernel] [--cpu-time] "
            "[--alpha MODE]\n");
    return 2;
}

/* Alpha of a 2/4-channel chart: transparent on the left quarter, a ramp up
 * to opaque across the middle half, opaque on the right quarter; some holes. */
static void alpha_ramp(ic_image *im)
{
    const int ac = im->channels - 1;
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++) {
            int q = (int)((long)x * 4 / im->width), a;
            if (q == 0)
                a = 0;
            else if (q == 3)
                a = 255;
            else
                a = (int)((long)(x - im->width / 4) * 255 / (im->width / 2 + 1));
            if (((x / 64) + (y / 64)) % 7 == 0)
                a = 0; /* holes */
            *ic_image_at(im, x, y, ac) = (uint8_t)a;
        }
}

int ic_bench_cpu_main(int argc, char **argv)
{
    const char *backend = "cpu", *ktext = "gaussian:3", *border = "mirror";
    const char *alpha = "independent";
    int w = 1920, h = 1080, ch = 3, runs = 21, warmup = 3;
    int threads[MAX_CTX] = {0}, nctx = 1;
    int convolve = 0, explain = 0, dump = 0;
    ic_layout layout = IC_AOS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "cpu") == 0 && i == 1)
            continue; /* the subcommand name */
        if (strcmp(a, "--convolve") == 0) {
            convolve = 1;
            continue;
        }
        if (strcmp(a, "--explain") == 0) {
            explain = 1;
            continue;
        }
        if (strcmp(a, "--dump-kernel") == 0) {
            dump = 1;
            continue;
        }
        if (strcmp(a, "--cpu-time") == 0) {
            timer_clock = CLOCK_THREAD_CPUTIME_ID;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--backend") == 0)
            backend = v;
        else if (strcmp(a, "--size") == 0) {
            if (sscanf(v, "%dx%d", &w, &h) != 2)
                return usage();
        } else if (strcmp(a, "--channels") == 0)
            ch = atoi(v);
        else if (strcmp(a, "--layout") == 0)
            layout = strcmp(v, "soa") == 0 ? IC_SOA : IC_AOS;
        else if (strcmp(a, "--kernel") == 0)
            ktext = v;
        else if (strcmp(a, "--threads") == 0) {
            nctx = 0;
            for (const char *c = v; c && nctx < MAX_CTX; c = strchr(c, ',')) {
                if (*c == ',')
                    c++;
                threads[nctx++] = atoi(c);
            }
        } else if (strcmp(a, "--runs") == 0)
            runs = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            warmup = atoi(v);
        else if (strcmp(a, "--border") == 0)
            border = v;
        else if (strcmp(a, "--alpha") == 0)
            alpha = v;
        else
            return usage();
    }
    if (runs < 1 || warmup < 0)
        return usage();
    for (int c = 0; c < nctx; c++)
        if (threads[c] < 0)
            return usage();

    ic_kernel k;
    if (ic_kernel_parse(&k, ktext) != IC_OK) {
        fprintf(stderr, "cpu-bench: kernel: %s\n", ic_last_error());
        return 1;
    }
    if (dump) {
        printf("%d %d", k.width, k.height);
        for (int j = 0; j < k.height; j++)
            for (int i = 0; i < k.width; i++)
                printf(" %.9g", ic_kernel_weight(&k, i, j));
        printf("\n");
        ic_kernel_free(&k);
        return 0;
    }
    ic_params p;
    ic_params_default(&p);
    p.correlate = !convolve;
    if (ic_border_parse(border, &p.border) != IC_OK || ic_alpha_parse(alpha, &p.alpha) != IC_OK) {
        fprintf(stderr, "cpu-bench: unknown border %s or alpha mode %s\n", border, alpha);
        ic_kernel_free(&k);
        return 1;
    }

    ic_image src, dst;
    ic_status st = ic_image_create(&src, w, h, ch, layout);
    if (st == IC_OK)
        st = ic_image_create(&dst, w, h, ch, layout);
    if (st == IC_OK)
        st = ic_image_chart(&src, 1);
    if (st == IC_OK && (ch == 2 || ch == 4))
        alpha_ramp(&src);
    ic_context *ctx[MAX_CTX] = {NULL};
    for (int c = 0; c < nctx && st == IC_OK; c++) {
        ic_context_options o;
        memset(&o, 0, sizeof o);
        o.threads = threads[c];
        st = ic_context_create(&ctx[c], backend, &o);
    }
    double *t = calloc((size_t)runs * MAX_CTX, sizeof *t);
    if (st != IC_OK || !t) {
        fprintf(stderr, "cpu-bench: %s %s\n", st != IC_OK ? ic_status_str(st) : "no memory",
                st != IC_OK ? ic_last_error() : "");
        free(t);
        for (int c = 0; c < nctx; c++)
            ic_context_free(ctx[c]);
        ic_image_free(&src);
        ic_image_free(&dst);
        ic_kernel_free(&k);
        return 1;
    }
    char plan[512] = "";
    if (explain && ic_plan_explain(ctx[nctx - 1], &src, &k, &p, plan, sizeof plan) == IC_OK) {
        for (char *c = plan; *c; c++)
            if (*c == '\n' || *c == '"')
                *c = ' ';
    }
    /* Several contexts take turns in short blocks, so that whatever else the
     * machine does at some moment weighs on each of them alike. Each block
     * starts with untimed calls, at least BLOCK_WARM_MS of them, that wake
     * the context's sleeping workers: on the dev VM a worker that slept joins
     * the next call up to a millisecond late (9x9 Gaussian, 1920x1080, 2
     * threads: 2.6 ms back to back, 3.2-4.4 ms after 20 ms idle; 1 thread
     * unaffected). So every context is timed in the steady state of calls back
     * to back. */
    for (int c = 0; c < nctx && st == IC_OK; c++)
        for (int r = 0; r < warmup && st == IC_OK; r++)
            st = ic_convolve(ctx[c], &src, &dst, &k, &p);
    for (int done = 0; done < runs && st == IC_OK;) {
        int block = nctx > 1 ? BLOCK : runs;
        if (block > runs - done)
            block = runs - done;
        for (int c = 0; c < nctx && st == IC_OK; c++) {
            double warm0 = now_ms();
            while (nctx > 1 && st == IC_OK && now_ms() - warm0 < BLOCK_WARM_MS)
                st = ic_convolve(ctx[c], &src, &dst, &k, &p);
            for (int r = 0; r < block && st == IC_OK; r++) {
                double t0 = now_ms();
                st = ic_convolve(ctx[c], &src, &dst, &k, &p);
                t[(size_t)c * runs + done + r] = now_ms() - t0;
            }
        }
        done += block;
    }
    if (st != IC_OK) {
        fprintf(stderr, "cpu-bench: ic_convolve: %s\n", ic_status_str(st));
    } else {
        char thr[64] = "", med[128] = "", mn[128] = "";
        for (int c = 0; c < nctx; c++) {
            double *tc = t + (size_t)c * runs;
            qsort(tc, (size_t)runs, sizeof *tc, cmp_double);
            const char *sep = c ? "," : "";
            snprintf(thr + strlen(thr), sizeof thr - strlen(thr), "%s%d", sep, threads[c]);
            snprintf(med + strlen(med), sizeof med - strlen(med), "%s%.4f", sep, tc[runs / 2]);
            snprintf(mn + strlen(mn), sizeof mn - strlen(mn), "%s%.4f", sep, tc[0]);
        }
        const char *lb = nctx > 1 ? "[" : "", *rb = nctx > 1 ? "]" : "";
        printf("{\"backend\":\"%s\",\"size\":\"%dx%d\",\"channels\":%d,\"layout\":\"%s\","
               "\"kernel\":\"%s\",\"alpha\":\"%s\",\"threads\":%s%s%s,\"runs\":%d,\"median_ms\":%s%"
               "s%s,"
               "\"min_ms\":%s%s%s,\"plan\":\"%s\"}\n",
               ic_context_backend(ctx[0]), w, h, ch, layout == IC_SOA ? "soa" : "aos", ktext, alpha,
               lb, thr, rb, runs, lb, med, rb, lb, mn, rb, plan);
    }
    free(t);
    for (int c = 0; c < nctx; c++)
        ic_context_free(ctx[c]);
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_kernel_free(&k);
    return st == IC_OK ? 0 : 1;
}

__attribute__((weak)) int main(int argc, char **argv)
{
    return ic_bench_cpu_main(argc, argv);
}
