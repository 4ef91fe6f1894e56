/*
 * serve_client.c - imgconv --server URL [OPTIONS] INPUT OUTPUT: the job is
 * sent to a running imgconv serve, so that a shell user gets its warm
 * latency. The filter options go as the query (the server parses them with
 * the same option table), INPUT as the body, and the reply is written to
 * OUTPUT with the CLI's own rules (checked before sending, published
 * atomically). One blocking HTTP/1.1 request per run, over TCP
 * (http://HOST:PORT) or a unix socket (unix:PATH).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli_files.h"
#include "serve.h"

/* Appends text to the query, %-escaping what is not unreserved. */
static void query_add(char *q, size_t len, const char *text)
{
    size_t n = strlen(q);
    for (const unsigned char *p = (const unsigned char *)text; *p && n + 4 < len; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~:", *p))
            q[n++] = (char)*p;
        else
            n += (size_t)snprintf(q + n, len - n, "%%%02X", *p);
    }
    q[n] = '\0';
}

/* Opens the connection of url: http://HOST:PORT[/] or unix:PATH. */
static int url_connect(const char *url, int timeout, char *host, size_t hlen, cli_err *e)
{
    int fd = -1;
    if (strncmp(url, "unix:", 5) == 0) {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        if (strlen(url + 5) >= sizeof sa.sun_path || !url[5])
            return -cli_fail(e, CLI_EXIT_USAGE, NULL, "--server '%s': bad socket path", url);
        memcpy(sa.sun_path, url + 5, strlen(url + 5));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            const int err = errno;
            if (fd >= 0)
                close(fd);
            return -cli_fail(e, CLI_EXIT_DEVICE, NULL, "--server '%s': cannot connect: %s", url,
                             strerror(err));
        }
        snprintf(host, hlen, "localhost");
    } else {
        char hp[256], port[16] = "80";
        if (strncmp(url, "http://", 7) != 0 || strlen(url + 7) >= sizeof hp)
            return -cli_fail(e, CLI_EXIT_USAGE, NULL,
                             "--server '%s': expected http://HOST:PORT or unix:PATH", url);
        snprintf(hp, sizeof hp, "%s", url + 7);
        hp[strcspn(hp, "/")] = '\0';
        snprintf(host, hlen, "%s", hp);
        char *h = hp, *colon = strrchr(hp, ':');
        if (colon && (!strchr(hp, ']') || colon > strchr(hp, ']'))) {
            *colon = '\0';
            snprintf(port, sizeof port, "%s", colon + 1);
        }
        if (h[0] == '[') {
            h++;
            h[strcspn(h, "]")] = '\0';
        }
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_STREAM;
        const int rc = getaddrinfo(h, port, &hints, &res);
        if (rc != 0)
            return -cli_fail(e, CLI_EXIT_DEVICE, NULL, "--server '%s': %s", url, gai_strerror(rc));
        int err = 0;
        for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
            fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
                err = errno;
                close(fd);
                fd = -1;
            }
        }
        freeaddrinfo(res);
        if (fd < 0)
            return -cli_fail(e, CLI_EXIT_DEVICE, NULL, "--server '%s': cannot connect: %s", url,
                             strerror(err));
    }
    const struct timeval tv = {timeout, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        const ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        c += w;
        n -= (size_t)w;
    }
    return 1;
}

/* Reads the whole reply (the server closes: Connection: close), at most cap
 * bytes. */
static int recv_all(int fd, uint64_t cap, char **out, size_t *size)
{
    size_t n = 0, room = 1 << 16;
    char *p = malloc(room + 1);
    while (p) {
        const ssize_t r = recv(fd, p + n, room - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(p);
            return 0;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == room) {
            if ((uint64_t)room >= cap) {
                free(p);
                return 0;
            }
            char *q = realloc(p, room * 2 + 1);
            if (!q)
                free(p);
            p = q;
            room *= 2;
        }
    }
    if (!p)
        return 0;
    p[n] = '\0';
    *out = p;
    *size = n;
    return 1;
}

/* The "message" of an error reply's JSON body, or the body's first line. */
static void error_message(const char *body, char *msg, size_t len)
{
    const char *m = strstr(body, "\"message\": \"");
    size_t n = 0;
    if (m) {
        for (m += 12; *m && *m != '"' && n + 1 < len; m++) {
            if (*m == '\\' && m[1])
                m++;
            msg[n++] = *m;
        }
    } else {
        for (; *body && *body != '\n' && n + 1 < len; body++)
            msg[n++] = *body;
    }
    msg[n] = '\0';
}

/* The exit code of an error status, as the CLI's own errors would give. */
static int exit_for_http(int http)
{
    if (http == 400 || http == 401 || http == 404 || http == 405)
        return CLI_EXIT_USAGE;
    if (http == 413 || http == 415 || http == 422)
        return CLI_EXIT_INPUT;
    return CLI_EXIT_DEVICE;
}

/* The request's line and headers; the query from the forwarded options and
 * OUTPUT's extension. */
static int request_head(const cli_options *o, const char *host, size_t body, char *head,
                        size_t hlen, cli_err *e)
{
    char query[8192] = "";
    int has_format = 0;
    for (int i = 0; i < o->nforward; i++) {
        if (query[0])
            strncat(query, "&", sizeof query - strlen(query) - 1);
        query_add(query, sizeof query, o->forward[i][0]);
        if (o->forward[i][1][0]) {
            strncat(query, "=", sizeof query - strlen(query) - 1);
            query_add(query, sizeof query, o->forward[i][1]);
        }
        has_format |= strcmp(o->forward[i][0], "format") == 0;
    }
    if (!has_format) {
        const char *dot = strrchr(o->output, '.');
        if (dot && !strchr(dot, '/')) {
            strncat(query, "&format=", sizeof query - strlen(query) - 1);
            query_add(query, sizeof query, dot + 1);
        }
    }
    char token[600] = "";
    if (o->token_file) {
        FILE *f = fopen(o->token_file, "r");
        char line[512] = "";
        if (!f || !fgets(line, sizeof line, f)) {
            if (f)
                fclose(f);
            return cli_fail(e, CLI_EXIT_INPUT, o->token_file, "cannot read the token");
        }
        fclose(f);
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(token, sizeof token, "Authorization: Bearer %s\r\n", line);
    }
    const int n = snprintf(head, hlen,
                           "POST /v1/filter?%s HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                           "application/octet-stream\r\nContent-Length: %zu\r\n%s"
                           "Connection: close\r\n\r\n",
                           query, host, body, token);
    if (n < 0 || (size_t)n >= hlen)
        return cli_fail(e, CLI_EXIT_USAGE, NULL, "too many options for one request");
    return CLI_EXIT_OK;
}

/* Sends the request, reads the reply, and splits it: *http, the body. */
static int exchange(const cli_options *o, const uint8_t *in, size_t n, int *http, char **reply,
                    const char **body, size_t *body_size, cli_err *e)
{
    char host[256], head[9000];
    const int fd = url_connect(o->server, o->timeout, host, sizeof host, e);
    if (fd < 0)
        return -fd;
    int code = request_head(o, host, n, head, sizeof head, e);
    size_t size = 0;
    if (code == CLI_EXIT_OK && (!send_all(fd, head, strlen(head)) || !send_all(fd, in, n) ||
                                !recv_all(fd, o->max_memory, reply, &size)))
        code = cli_fail(e, CLI_EXIT_DEVICE, NULL, "--server '%s': %s", o->server,
                        errno == EAGAIN ? "timed out (--timeout)" : strerror(errno));
    close(fd);
    if (code != CLI_EXIT_OK)
        return code;
    const char *end = strstr(*reply, "\r\n\r\n");
    if (sscanf(*reply, "HTTP/1.%*d %d", http) != 1 || !end)
        return cli_fail(e, CLI_EXIT_DEVICE, NULL, "--server '%s': not an HTTP reply", o->server);
    *body = end + 4;
    *body_size = size - (size_t)(*body - *reply);
    return CLI_EXIT_OK;
}

int cli_run_client(const cli_options *o, cli_err *e)
{
    const int to_stdout = strcmp(o->output, "-") == 0;
    int code = to_stdout ? CLI_EXIT_OK : cli_check_output(o->output, o->input, e);
    if (code == CLI_EXIT_OK && !to_stdout)
        code = cli_check_replace(o, e);
    if (code != CLI_EXIT_OK)
        return code;
    uint8_t *in = NULL;
    size_t n = 0;
    char msg[256] = "";
    ic_status s = IC_OK;
    if (strcmp(o->input, "-") == 0) {
        code = cli_read_stdin(o->max_memory ? o->max_memory : ic_max_memory_default(), &in, &n, e);
        if (code != CLI_EXIT_OK)
            return code;
    } else {
        s = cli_read_file(o->input, o->max_memory, NULL, &in, &n, msg, sizeof msg);
        if (s != IC_OK)
            return cli_fail(e, cli_exit_for_input(s), o->input, "%s", msg);
    }
    int http = 0;
    char *reply = NULL;
    const char *body = NULL;
    size_t body_size = 0;
    code = exchange(o, in, n, &http, &reply, &body, &body_size, e);
    free(in);
    if (code == CLI_EXIT_OK && http != 200) {
        char why[400];
        error_message(body, why, sizeof why);
        code = cli_fail(e, exit_for_http(http), o->input, "server: %d: %s", http, why);
    }
    if (code == CLI_EXIT_OK) {
        if (to_stdout) {
            if (fwrite(body, 1, body_size, stdout) != body_size || fflush(stdout) != 0)
                code = cli_fail(e, CLI_EXIT_OUTPUT, "-", "write error: %s", strerror(errno));
        } else {
            s = cli_noted(ic_bytes_save(o->output, body, body_size), msg, sizeof msg);
            if (s != IC_OK)
                code = cli_fail(e, cli_exit_for_output(s), o->output, "%s", msg);
        }
    }
    free(reply);
    return code;
}
