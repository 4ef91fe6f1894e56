/*
 * jpeg_internal.h - what the libjpeg code of src/io/ shares (jpeg.c,
 * jpeg_restart.c): the error manager every decoder reports to, and the
 * decoder of files with restart markers on several threads. Private to
 * src/io/ and built only with IC_HAVE_JPEG; includes jpeglib.h.
 */
#ifndef IC_JPEG_INTERNAL_H
#define IC_JPEG_INTERNAL_H

#include <setjmp.h>
#include <stdio.h>
/* jpeglib.h needs FILE and size_t declared first (stdio.h above). */
#include <jpeglib.h>

#include "io/io_internal.h"

/* libjpeg's error manager as the readers and writers use it: errors longjmp
 * to `jump` with the one-line message in msg, nothing is printed, and the
 * warnings that mean damaged pixels fail unless accept_damaged. */
typedef struct ic_jpeg_err {
    struct jpeg_error_mgr pub; /* first: libjpeg sees only this part */
    jmp_buf jump;
    int truncated; /* the data ended early (JWRN_JPEG_EOF) */
    int nomem;
    int accept_damaged; /* damaged entropy-coded data is decoded as far as it goes */
    int damaged;        /* and some was */
    char msg[JMSG_LENGTH_MAX + 32];
} ic_jpeg_err;

/* Sets e up (jpeg.c); lim's policy on damaged data applies (NULL: refuse
 * it), so that every decoder gives the same verdict. */
void ic_jpeg_err_init(ic_jpeg_err *e, const ic_io_limits *lim);

/* A zeroed decompressor reporting to je, set up by ic_jpeg_err_init(je,
 * lim), before jpeg_create_decompress (jpeg.c). */
void ic_jpeg_decompress_init(struct jpeg_decompress_struct *cinfo, ic_jpeg_err *je,
                             const ic_io_limits *lim);

/* How many parts (2 or more) ic_jpeg_restart_decode would cut the file
 * that cinfo reads (header read) into, by its kind and size alone; 0 when
 * it stays on one thread. Sets lim->jpeg_parts (tests) to 0. */
int ic_jpeg_restart_parts(const struct jpeg_decompress_struct *cinfo, const ic_io_limits *lim);

/* Decodes the file that cinfo (jpeg_start_decompress done, nothing of the
 * image read yet) is reading from f into img, allocated by the caller at
 * the output size with 1 (grey) or 3 (RGB) channels, on up to lim->threads
 * threads when it is a baseline single-scan grey or YCbCr file with restart
 * markers, large enough to gain (jpeg_restart.c). img may be unzeroed:
 * every byte of its rows, padding included, is written. Returns 1 when img holds
 * exactly the pixels of the serial decode; 0 when the file does not qualify
 * or any part of it failed or warned: the caller then decodes serially,
 * giving today's verdict. Neither f's position nor cinfo is changed. */
int ic_jpeg_restart_decode(const struct jpeg_decompress_struct *cinfo, FILE *f, ic_image *img,
                           const ic_io_limits *lim);

#endif /* IC_JPEG_INTERNAL_H */
