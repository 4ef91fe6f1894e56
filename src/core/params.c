/* params.c - border modes and alpha modes: names, aliases, defaults, and the
 * public coordinate mapping (a thin wrapper over border.h, shared with CUDA). */
#include <string.h>
#include <strings.h>

#include "core/border.h"
#include "core/error.h"
#include "imgconv.h"

typedef struct alias {
    const char *name;
    int value;
} alias;

static const alias border_aliases[] = {
    {"constant", IC_BORDER_CONSTANT},   {"zero", IC_BORDER_CONSTANT},
    {"replicate", IC_BORDER_REPLICATE}, {"edge", IC_BORDER_REPLICATE},
    {"nearest", IC_BORDER_REPLICATE},   {"clamp", IC_BORDER_REPLICATE},
    {"mirror", IC_BORDER_MIRROR},       {"reflect101", IC_BORDER_MIRROR},
    {"reflect-101", IC_BORDER_MIRROR},  {"reflect_101", IC_BORDER_MIRROR},
    {"reflect", IC_BORDER_REFLECT},     {"symmetric", IC_BORDER_REFLECT},
    {"wrap", IC_BORDER_WRAP},           {"periodic", IC_BORDER_WRAP},
    {"circular", IC_BORDER_WRAP},
};

static const alias alpha_names[] = {
    {"auto", IC_ALPHA_AUTO},
    {"premultiply", IC_ALPHA_PREMULTIPLY},
    {"keep", IC_ALPHA_KEEP},
    {"independent", IC_ALPHA_INDEPENDENT},
};

static int lookup(const alias *t, size_t n, const char *name, int *out)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(t[i].name, name) == 0) {
            *out = t[i].value;
            return 1;
        }
    return 0;
}

ic_status ic_border_parse(const char *name, ic_border *out)
{
    int v;
    if (!out || !lookup(border_aliases, sizeof border_aliases / sizeof *border_aliases, name, &v))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "unknown border '%s' (constant, replicate, mirror, reflect or wrap)",
                       name ? name : "(NULL)");
    *out = (ic_border)v;
    return IC_OK;
}

const char *ic_border_name(ic_border b)
{
    static const char *names[] = {"constant", "replicate", "mirror", "reflect", "wrap"};
    return (unsigned)b < 5 ? names[b] : "unknown";
}

int ic_border_index(int i, int n, ic_border b)
{
    if (n < 1)
        return -1;
    return ic_border_map(i, n, (int)b);
}

ic_status ic_alpha_parse(const char *name, ic_alpha *out)
{
    int v;
    if (!out || !lookup(alpha_names, sizeof alpha_names / sizeof *alpha_names, name, &v))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "unknown alpha mode '%s' (auto, premultiply, keep or independent)",
                       name ? name : "(NULL)");
    *out = (ic_alpha)v;
    return IC_OK;
}

const char *ic_alpha_name(ic_alpha a)
{
    return (unsigned)a < 4 ? alpha_names[a].name : "unknown";
}

void ic_params_default(ic_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->border = IC_BORDER_MIRROR;
    p->border_value = 0.0f;
    p->correlate = 0;
    p->bias = 0.0f;
    p->alpha = IC_ALPHA_AUTO;
}
