/*
 * test_limits.c - the memory budget of ic_convolve (ic_context_options.
 * max_memory, ic_convolve_bytes), through the public API: what is counted
 * (source, destination, the layout conversion copy, the seq backend's padded
 * plane), that a call over the budget is refused before anything is computed
 * with a message naming the limit, and that the default is in force.
 * (The load limits are in test_io.c; the CLI's in tests/cli/limits.sh.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "testutil.h"

static ic_context *open_ctx(const char *backend, uint64_t max_memory)
{
    ic_context_options co;
    memset(&co, 0, sizeof co);
    co.threads = 1;
    co.max_memory = max_memory;
    ic_context *ctx = NULL;
    ic_status st = ic_context_create(&ctx, backend, &co);
    ICT_EXPECT(st == IC_OK, "context %s: %s", backend, ic_last_error());
    return ctx;
}

int main(void)
{
    ic_kernel k;
    if (ic_kernel_parse(&k, "box:5x3") != IC_OK) {
        printf("FAIL box:5x3: %s\n", ic_last_error());
        return 1;
    }
    /* 100x50 RGB: AoS rows of 300 bytes pad to 320; SoA planes of 100 to 128. */
    ic_image src, dst, soa;
    if (ic_image_create(&src, 100, 50, 3, IC_AOS) != IC_OK ||
        ic_image_create(&dst, 100, 50, 3, IC_AOS) != IC_OK ||
        ic_image_create(&soa, 100, 50, 3, IC_SOA) != IC_OK) {
        printf("FAIL allocation\n");
        return 1;
    }
    ic_image_chart(&src, 1);
    const uint64_t aos_bytes = 320u * 50u, soa_bytes = 128u * 50u * 3u;

    ic_context *cpu = open_ctx("cpu", 0);
    ic_context *seq = open_ctx("seq", 0);
    if (!cpu || !seq)
        return 1;
    ICT_EXPECT(ic_convolve_bytes(cpu, &src, &k, IC_AOS) == 2 * aos_bytes, "cpu AoS->AoS: %llu",
               (unsigned long long)ic_convolve_bytes(cpu, &src, &k, IC_AOS));
    ICT_EXPECT(ic_convolve_bytes(cpu, &src, &k, IC_SOA) == aos_bytes + soa_bytes + aos_bytes,
               "cpu AoS->SoA counts the conversion copy: %llu",
               (unsigned long long)ic_convolve_bytes(cpu, &src, &k, IC_SOA));
    const uint64_t plane = (100u + 4u) * (50u + 2u) * sizeof(float);
    ICT_EXPECT(ic_convolve_bytes(seq, &src, &k, IC_AOS) == 2 * aos_bytes + plane,
               "seq counts its padded plane: %llu",
               (unsigned long long)ic_convolve_bytes(seq, &src, &k, IC_AOS));
    ICT_EXPECT(ic_convolve_bytes(NULL, &src, &k, IC_AOS) == 0, "NULL context");
    ICT_EXPECT(ic_convolve_bytes(cpu, &src, NULL, IC_AOS) == 0, "NULL kernel");
    ICT_EXPECT(ic_convolve(cpu, &src, &dst, &k, NULL) == IC_OK, "default budget: %s",
               ic_last_error());
    ic_context_free(cpu);
    ic_context_free(seq);

    /* Exactly the budget passes; one byte less is refused before any sample
     * of dst is written. */
    cpu = open_ctx("cpu", 2 * aos_bytes);
    ICT_EXPECT(cpu && ic_convolve(cpu, &src, &dst, &k, NULL) == IC_OK, "at the budget: %s",
               cpu ? ic_last_error() : "");
    ic_context_free(cpu);
    cpu = open_ctx("cpu", 2 * aos_bytes - 1);
    memset(dst.data, 0xA5, ic_image_size_bytes(&dst));
    ic_status st = cpu ? ic_convolve(cpu, &src, &dst, &k, NULL) : IC_ERR_INTERNAL;
    ICT_EXPECT(st == IC_ERR_TOO_LARGE, "one byte under: %s", ic_status_str(st));
    ICT_EXPECT(cpu && strstr(ic_last_error(), "memory limit") &&
                   strstr(ic_last_error(), "--max-memory"),
               "message '%s'", cpu ? ic_last_error() : "");
    int untouched = 1;
    for (size_t i = 0; i < ic_image_size_bytes(&dst); i++)
        untouched &= dst.data[i] == 0xA5;
    ICT_EXPECT(untouched, "a refused call wrote into dst");
    /* The conversion copy counts too. */
    ic_context_free(cpu);
    cpu = open_ctx("cpu", aos_bytes + soa_bytes + aos_bytes - 1);
    st = cpu ? ic_convolve(cpu, &src, &soa, &k, NULL) : IC_ERR_INTERNAL;
    ICT_EXPECT(st == IC_ERR_TOO_LARGE, "AoS->SoA under its budget: %s", ic_status_str(st));
    ic_context_free(cpu);
    cpu = open_ctx("cpu", UINT64_MAX);
    ICT_EXPECT(cpu && ic_convolve(cpu, &src, &soa, &k, NULL) == IC_OK, "no limit");
    ic_context_free(cpu);

    ic_image_free(&src);
    ic_image_free(&dst);
    ic_image_free(&soa);
    ic_kernel_free(&k);
    printf("test_limits: %d checks, %d failed\n", ict_checks, ict_failed);
    return ict_failed ? 1 : 0;
}
