/*
 * _imgconv.c - the CPython extension under the `imgconv` package: a thin layer
 * over the public C API (include/imgconv.h). It wraps the caller's memory
 * (the buffer protocol for host arrays, raw device pointers for CUDA arrays)
 * as ic_image without copying, keeps ic_context and ic_kernel objects alive
 * across calls, releases the GIL while filtering, loading and saving, and
 * turns every failure into an imgconv.Error subclass carrying the library's
 * one-line message. Array checks, output allocation and the friendly signature live in
 * python/imgconv/__init__.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"

static PyObject *ErrorFactory; /* imgconv._error(status, message), set at import */

/* Raises the exception that imgconv._error picks for the status (ValueError,
 * MemoryError or OSError subclasses of imgconv.Error), with .status set. */
static PyObject *raise_status(ic_status st, const char *msg)
{
    const char *text = (msg && msg[0]) ? msg : ic_status_str(st);
    if (!ErrorFactory) {
        PyErr_SetString(PyExc_RuntimeError, text);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(ErrorFactory, "is", (int)st, text);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ---- Kernel --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD ic_kernel k;
} KernelObject;

static void Kernel_dealloc(KernelObject *self)
{
    ic_kernel_free(&self->k);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Kernel(text) parses the kernel grammar; Kernel(coefficients_bytes, width,
 * height, divisor) takes width*height float32 values (correlation orientation,
 * row-major). */
static int Kernel_init(KernelObject *self, PyObject *args, PyObject *kwds)
{
    static char *kw[] = {"source", "width", "height", "divisor", NULL};
    PyObject *source;
    int w = 0, h = 0;
    double divisor = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|iid", kw, &source, &w, &h, &divisor))
        return -1;
    ic_kernel_free(&self->k);
    char err[256] = "";
    ic_status st;
    if (PyUnicode_Check(source)) {
        const char *text = PyUnicode_AsUTF8(source);
        if (!text)
            return -1;
        st = ic_kernel_parse(&self->k, text);
        if (st != IC_OK)
            snprintf(err, sizeof err, "%s", ic_last_error());
    } else {
        Py_buffer view;
        if (PyObject_GetBuffer(source, &view, PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        if (w < 1 || h < 1 || (size_t)view.len != (size_t)w * (size_t)h * sizeof(float)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError,
                            "kernel buffer must hold width*height float32 values");
            return -1;
        }
        st = ic_kernel_create(&self->k, w, h, (const float *)view.buf, divisor);
        PyBuffer_Release(&view);
        if (st != IC_OK)
            snprintf(err, sizeof err,
                     "bad %dx%d kernel: %s (odd sizes 1..%d, finite values, nonzero divisor)", w, h,
                     ic_status_str(st), IC_MAX_KERNEL);
    }
    if (st != IC_OK) {
        raise_status(st, err);
        return -1;
    }
    return 0;
}

static PyObject *Kernel_get(KernelObject *self, void *which)
{
    switch ((intptr_t)which) {
    case 0:
        return PyLong_FromLong(self->k.width);
    case 1:
        return PyLong_FromLong(self->k.height);
    case 2:
        return PyFloat_FromDouble(self->k.divisor);
    case 3:
        return PyFloat_FromDouble(self->k.offset);
    case 4:
        return PyUnicode_FromString(self->k.name);
    case 6:
        return PyBool_FromLong(self->k.magnitude);
    default:
        return PyFloat_FromDouble(ic_kernel_sum(&self->k));
    }
}

/* The effective weights (coefficient / divisor) as float64 bytes, row-major. */
static PyObject *Kernel_weights(KernelObject *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t n = (Py_ssize_t)self->k.width * self->k.height;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (!out)
        return NULL;
    double *w = (double *)PyBytes_AS_STRING(out);
    for (int j = 0; j < self->k.height; j++)
        for (int i = 0; i < self->k.width; i++)
            w[(size_t)j * (size_t)self->k.width + (size_t)i] = ic_kernel_weight(&self->k, i, j);
    return out;
}

static PyGetSetDef Kernel_getset[] = {
    {"width", (getter)Kernel_get, NULL, "kernel width", (void *)0},
    {"height", (getter)Kernel_get, NULL, "kernel height", (void *)1},
    {"divisor", (getter)Kernel_get, NULL, "divisor of every coefficient", (void *)2},
    {"offset", (getter)Kernel_get, NULL, "bias suggested by the source (.mat OFFSET)", (void *)3},
    {"name", (getter)Kernel_get, NULL, "name used in messages", (void *)4},
    {"sum", (getter)Kernel_get, NULL, "sum of the effective weights", (void *)5},
    {"magnitude", (getter)Kernel_get, NULL,
     "True for an edge strength: sqrt of the squares of the weights' and their transpose's "
     "results",
     (void *)6},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef Kernel_methods[] = {{"weights_bytes", (PyCFunction)Kernel_weights, METH_NOARGS,
                                        "effective weights, float64, row-major"},
                                       {NULL, NULL, 0, NULL}};

/* A subclassable type NAME with NAME##Object, NAME##_init, _dealloc,
 * _getset and _methods. */
#define IC_PY_TYPE(NAME, DOC)                                                                      \
    {                                                                                              \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "imgconv._imgconv." #NAME,                        \
                                    .tp_basicsize = sizeof(NAME##Object),                          \
                                    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,          \
                                    .tp_doc = DOC, .tp_new = PyType_GenericNew,                    \
                                    .tp_init = (initproc)NAME##_init,                              \
                                    .tp_dealloc = (destructor)NAME##_dealloc,                      \
                                    .tp_getset = NAME##_getset, .tp_methods = NAME##_methods,      \
    }

static PyTypeObject KernelType = IC_PY_TYPE(Kernel, "A parsed convolution kernel (ic_kernel).");

/* ---- Context ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD ic_context *ctx;
    PyThread_type_lock lock; /* a context is not safe for two threads at once */
} ContextObject;

static void Context_dealloc(ContextObject *self)
{
    ic_context_free(self->ctx);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Context_init(ContextObject *self, PyObject *args, PyObject *kwds)
{
    static char *kw[] = {"backend", "threads", "device", NULL};
    const char *backend = "auto";
    ic_context_options o;
    memset(&o, 0, sizeof o);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|zii", kw, &backend, &o.threads, &o.device))
        return -1;
    if (self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Context already initialised");
        return -1;
    }
    if (!self->lock && !(self->lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return -1;
    }
    ic_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ic_context_create(&self->ctx, backend, &o);
    Py_END_ALLOW_THREADS
    if (st != IC_OK) {
        raise_status(st, ic_last_error());
        return -1;
    }
    return 0;
}

static PyObject *Context_backend(ContextObject *self, void *Py_UNUSED(c))
{
    if (!self->ctx)
        Py_RETURN_NONE;
    return PyUnicode_FromString(ic_context_backend(self->ctx));
}

/* Checks that the context is open and fills *p from the call's arguments. */
static int call_ready(ContextObject *self, ic_params *p, const char *border, double border_value,
                      int correlate, double bias, const char *alpha)
{
    if (!self->ctx) {
        raise_status(IC_ERR_INVALID_ARG, "context not initialised");
        return -1;
    }
    ic_params_default(p);
    if (ic_border_parse(border, &p->border) != IC_OK) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "unknown border mode '%s' (constant, replicate, mirror, reflect, wrap)", border);
        raise_status(IC_ERR_INVALID_ARG, msg);
        return -1;
    }
    if (ic_alpha_parse(alpha, &p->alpha) != IC_OK) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown alpha mode '%s' (auto, premultiply, keep, independent)",
                 alpha);
        raise_status(IC_ERR_INVALID_ARG, msg);
        return -1;
    }
    p->border_value = (float)border_value;
    p->correlate = correlate;
    p->bias = (float)bias;
    return 0;
}

/* The kernels of a call: one Kernel, or a tuple of them (a chain). Holds a
 * reference to the tuple while the GIL is released; *ks (malloc'd) borrows
 * their coefficients. Returns the count, or -1 with an exception set. */
static int kernels_of(PyObject *obj, ic_kernel **ks)
{
    *ks = NULL;
    if (PyObject_TypeCheck(obj, &KernelType)) {
        *ks = malloc(sizeof **ks);
        if (!*ks) {
            PyErr_NoMemory();
            return -1;
        }
        (*ks)[0] = ((KernelObject *)obj)->k;
        return 1;
    }
    if (!PyTuple_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "kernel must be a Kernel or a tuple of Kernels");
        return -1;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(obj);
    *ks = malloc((size_t)(n > 0 ? n : 1) * sizeof **ks);
    if (!*ks) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(obj, i);
        if (!PyObject_TypeCheck(item, &KernelType)) {
            free(*ks);
            *ks = NULL;
            PyErr_Format(PyExc_TypeError, "chain element %zd is not a Kernel", i);
            return -1;
        }
        (*ks)[i] = ((KernelObject *)item)->k;
    }
    return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* Runs ic_convolve (ic_convolve_chain for a tuple of kernels) with the GIL
 * released and the context's lock held; kobj stays referenced meanwhile. */
static PyObject *run_convolve(ContextObject *self, const ic_image *src, ic_image *dst,
                              PyObject *kobj, const ic_params *p)
{
    ic_kernel *ks;
    const int n = kernels_of(kobj, &ks);
    if (n < 0)
        return NULL;
    const int chain = !PyObject_TypeCheck(kobj, &KernelType);
    ic_status st;
    char msg[320] = "";
    Py_INCREF(kobj);
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = chain ? ic_convolve_chain(self->ctx, src, dst, ks, n, p)
               : ic_convolve(self->ctx, src, dst, &ks[0], p);
    if (st != IC_OK)
        snprintf(msg, sizeof msg, "%s", ic_last_error());
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(kobj);
    free(ks);
    if (st != IC_OK)
        return raise_status(st, msg);
    Py_RETURN_NONE;
}

/* 1 when a buffer format is an unsigned integer of the given code ('B' or
 * 'H') in native byte order. */
static int native_format(const char *f, char code)
{
    if (!f)
        return code == 'B';
    if (f[0] == '=' || f[0] == '@' || f[0] == '|' ||
        (f[0] == '<' && (code == 'B' || PY_LITTLE_ENDIAN)) ||
        (f[0] == '>' && (code == 'B' || !PY_LITTLE_ENDIAN)))
        f++;
    return f[0] == code && f[1] == '\0';
}

/* Describes a host buffer of uint8, uint16 or float32 samples shaped (H, W)
 * or (H, W, C) as an AoS ic_image (IC_U8, IC_U16 or IC_F32) without copying: pixels C
 * samples apart, samples packed, rows `strides[0]` bytes apart (the pitch).
 * Anything else raises ValueError (the Python layer copies such arrays first). */
static int wrap_buffer(Py_buffer *v, ic_image *img, const char *what)
{
    const int wide = v->itemsize == 2 && native_format(v->format, 'H');
    const int fl = v->itemsize == 4 && native_format(v->format, 'f');
    if (!wide && !fl && (v->itemsize != 1 || !native_format(v->format, 'B'))) {
        PyErr_Format(PyExc_TypeError, "%s: samples must be uint8, uint16 or float32", what);
        return -1;
    }
    const Py_ssize_t es = fl ? 4 : wide ? 2 : 1;
    if (v->ndim != 2 && v->ndim != 3) {
        PyErr_Format(PyExc_ValueError, "%s: expected an H x W or H x W x C array", what);
        return -1;
    }
    Py_ssize_t h = v->shape[0], w = v->shape[1], c = v->ndim == 3 ? v->shape[2] : 1;
    Py_ssize_t sy = v->strides[0], sx = v->strides[1], sc = v->ndim == 3 ? v->strides[2] : es;
    if (h < 1 || w < 1 || h > IC_MAX_DIM || w > IC_MAX_DIM || c < 1 || c > 4) {
        PyErr_Format(PyExc_ValueError, "%s: %zd x %zd x %zd is outside 1..%d x 1..%d x 1..4", what,
                     h, w, c, IC_MAX_DIM, IC_MAX_DIM);
        return -1;
    }
    if ((c > 1 && sc != es) || sx != c * es || sy < w * c * es || sy % es != 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: strides (%zd, %zd, %zd) are not rows of packed pixels (copy it first)",
                     what, sy, sx, sc);
        return -1;
    }
    ic_status st = ic_image_wrap_type(img, v->buf, (int)w, (int)h, (int)c, IC_AOS, (size_t)sy,
                                      fl     ? IC_F32
                                      : wide ? IC_U16
                                             : IC_U8);
    if (st != IC_OK) {
        raise_status(st, "cannot wrap the array as an image");
        return -1;
    }
    return 0;
}

/* convolve(src, dst, kernel, border, border_value, correlate, bias, alpha[,
 * abs]): host arrays (buffer protocol) of the same shape, wrapped, never
 * copied; kernel a Kernel or a tuple of Kernels (a chain). */
static PyObject *Context_convolve(ContextObject *self, PyObject *args)
{
    PyObject *so, *dobj, *k;
    int correlate, absval = 0;
    const char *border, *alpha;
    double bv, bias;
    if (!PyArg_ParseTuple(args, "OOOsdpds|p", &so, &dobj, &k, &border, &bv, &correlate, &bias,
                          &alpha, &absval))
        return NULL;
    ic_params p;
    if (call_ready(self, &p, border, bv, correlate, bias, alpha) < 0)
        return NULL;
    p.abs = absval;
    Py_buffer sv, dv;
    if (PyObject_GetBuffer(so, &sv, PyBUF_RECORDS_RO) < 0)
        return NULL;
    if (PyObject_GetBuffer(dobj, &dv, PyBUF_RECORDS) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    PyObject *res = NULL;
    ic_image src, dst;
    if (wrap_buffer(&sv, &src, "image") < 0 || wrap_buffer(&dv, &dst, "out") < 0)
        goto out;
    if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels ||
        src.type != dst.type) {
        PyErr_SetString(PyExc_ValueError, "out must have the image's shape and dtype");
        goto out;
    }
    res = run_convolve(self, &src, &dst, k, &p);
out:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&dv);
    return res;
}

/* convolve_device(src_ptr, dst_ptr, kernel, height, width, channels, src_pitch,
 *                 dst_pitch, device, stream, border, border_value, correlate,
 *                 bias, alpha[, abs[, type]]): CUDA device pointers (from
 * __cuda_array_interface__ / DLPack), wrapped by ic_image_wrap_device_type
 * with samples of `type` (an ic_sample_type: 0 uint8, 2 float32). */
static PyObject *Context_convolve_device(ContextObject *self, PyObject *args)
{
    unsigned long long sptr, dptr, stream;
    PyObject *k;
    int h, w, c, device, correlate, absval = 0, type = IC_U8;
    Py_ssize_t sp, dp;
    const char *border, *alpha;
    double bv, bias;
    if (!PyArg_ParseTuple(args, "KKOiiinniKsdpds|pi", &sptr, &dptr, &k, &h, &w, &c, &sp, &dp,
                          &device, &stream, &border, &bv, &correlate, &bias, &alpha, &absval,
                          &type))
        return NULL;
    if (type != IC_U8 && type != IC_U16 && type != IC_F32)
        return raise_status(IC_ERR_INVALID_ARG, "unknown sample type");
    ic_params p;
    if (call_ready(self, &p, border, bv, correlate, bias, alpha) < 0)
        return NULL;
    p.abs = absval;
    ic_image src, dst;
    ic_status st =
        ic_image_wrap_device_type(&src, (void *)(uintptr_t)sptr, w, h, c, IC_AOS, (size_t)sp,
                                  (ic_sample_type)type, device, (void *)(uintptr_t)stream);
    if (st == IC_OK)
        st = ic_image_wrap_device_type(&dst, (void *)(uintptr_t)dptr, w, h, c, IC_AOS, (size_t)dp,
                                       (ic_sample_type)type, device, (void *)(uintptr_t)stream);
    if (st != IC_OK)
        return raise_status(st, "device image size, channels (1..4) or pitch out of range");
    return run_convolve(self, &src, &dst, k, &p);
}

static PyGetSetDef Context_getset[] = {
    {"backend", (getter)Context_backend, NULL, "name of the backend this context runs", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef Context_methods[] = {
    {"convolve", (PyCFunction)Context_convolve, METH_VARARGS, "filter a host buffer (low level)"},
    {"convolve_device", (PyCFunction)Context_convolve_device, METH_VARARGS,
     "filter a CUDA device buffer (low level)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ContextType =
    IC_PY_TYPE(Context, "A backend with its resources, reused across calls (ic_context).");

/* ---- module functions ---------------------------------------------------------- */

static PyObject *mod_set_error(PyObject *Py_UNUSED(m), PyObject *factory)
{
    if (!PyCallable_Check(factory)) {
        PyErr_SetString(PyExc_TypeError, "_set_error takes a callable (status, message)");
        return NULL;
    }
    Py_XSETREF(ErrorFactory, Py_NewRef(factory));
    Py_RETURN_NONE;
}

static PyObject *mod_version(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    return PyUnicode_FromString(ic_version());
}

/* backends() -> [(name, summary, usable, why)], and auto's pick. */
static PyObject *mod_backends(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    int n = ic_backend_count();
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        ic_backend_info bi;
        if (ic_backend_get(i, &bi) != IC_OK)
            continue;
        PyObject *t = Py_BuildValue("(ssOs)", bi.name, bi.summary, bi.usable ? Py_True : Py_False,
                                    bi.usable ? "" : bi.why);
        if (!t || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(t);
    }
    return list;
}

static PyObject *mod_backend_auto(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    return PyUnicode_FromString(ic_backend_auto());
}

static PyObject *mod_named_kernels(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    int n = 0;
    const ic_named_kernel_info *t = ic_kernel_list(&n);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *e = Py_BuildValue("(sss)", t[i].name, t[i].args, t[i].summary);
        if (!e) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, e);
    }
    return list;
}

/* load(path, channels) -> (bytearray, height, width, channels, bits), rows
 * packed; bits 16: native-order uint16 samples (16-bit PNG, TIFF, PNM). */
static PyObject *bytes_or_none(const uint8_t *p, size_t n)
{
    return p && n ? PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n) : Py_NewRef(Py_None);
}

/* load(path, channels) -> (bytearray, height, width, channels, bits, icc, exif);
 * icc and exif are bytes, or None when the file has none. */
static PyObject *mod_load(PyObject *Py_UNUSED(m), PyObject *args)
{
    PyObject *pathobj;
    int channels = 0;
    if (!PyArg_ParseTuple(args, "O&|i", PyUnicode_FSConverter, &pathobj, &channels))
        return NULL;
    ic_image img;
    ic_metadata meta;
    ic_load_options o;
    memset(&o, 0, sizeof o);
    memset(&meta, 0, sizeof meta);
    o.channels = channels;
    o.metadata = &meta;
    char msg[1024];
    ic_status st;
    const char *path = PyBytes_AS_STRING(pathobj);
    Py_BEGIN_ALLOW_THREADS
    st = ic_image_load(&img, path, &o);
    Py_END_ALLOW_THREADS
    if (st != IC_OK) {
        snprintf(msg, sizeof msg, "%s: %s", path, ic_last_error());
        Py_DECREF(pathobj);
        ic_metadata_free(&meta);
        return raise_status(st, msg);
    }
    Py_DECREF(pathobj);
    size_t row = ic_image_row_bytes(&img);
    PyObject *buf = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(row * (size_t)img.height));
    if (buf) {
        char *d = PyByteArray_AS_STRING(buf);
        for (int y = 0; y < img.height; y++)
            memcpy(d + row * (size_t)y, img.data + img.pitch * (size_t)y, row);
    }
    PyObject *icc = bytes_or_none(meta.icc, meta.icc_size);
    PyObject *exif = bytes_or_none(meta.exif, meta.exif_size);
    PyObject *res = NULL;
    if (buf && icc && exif) { /* "N" hands the three references to the tuple */
        res = Py_BuildValue("(NiiiiNN)", buf, img.height, img.width, img.channels,
                            img.type == IC_F32   ? 32
                            : img.type == IC_U16 ? 16
                                                 : 8,
                            icc, exif);
    } else {
        Py_XDECREF(buf);
        Py_XDECREF(icc);
        Py_XDECREF(exif);
    }
    ic_metadata_free(&meta);
    ic_image_free(&img);
    return res;
}

/* save(array, path, quality, icc=None, exif=None): writes an H x W [x C]
 * array atomically, with the ICC profile and EXIF block when given. */
static PyObject *mod_save(PyObject *Py_UNUSED(m), PyObject *args)
{
    PyObject *bo, *pathobj;
    int quality;
    Py_buffer icc = {0}, exif = {0};
    if (!PyArg_ParseTuple(args, "OO&i|z*z*", &bo, PyUnicode_FSConverter, &pathobj, &quality, &icc,
                          &exif))
        return NULL;
    ic_metadata meta = {(uint8_t *)icc.buf, icc.buf ? (size_t)icc.len : 0, (uint8_t *)exif.buf,
                        exif.buf ? (size_t)exif.len : 0};
    Py_buffer v;
    if (PyObject_GetBuffer(bo, &v, PyBUF_RECORDS_RO) < 0) {
        Py_DECREF(pathobj);
        return NULL;
    }
    PyObject *res = NULL;
    const char *path = PyBytes_AS_STRING(pathobj);
    char msg[1024];
    ic_image img;
    if (wrap_buffer(&v, &img, "image") == 0) {
        ic_save_options so;
        memset(&so, 0, sizeof so);
        so.quality = quality;
        so.metadata = (meta.icc || meta.exif) ? &meta : NULL;
        ic_status st;
        Py_BEGIN_ALLOW_THREADS
        st = ic_image_save(&img, path, &so);
        Py_END_ALLOW_THREADS
        if (st != IC_OK) {
            snprintf(msg, sizeof msg, "%s: %s", path, ic_last_error());
            raise_status(st, msg);
        } else {
            res = Py_NewRef(Py_None);
        }
    }
    PyBuffer_Release(&v);
    if (icc.buf)
        PyBuffer_Release(&icc);
    if (exif.buf)
        PyBuffer_Release(&exif);
    Py_DECREF(pathobj);
    return res;
}

/* chart(height, width, channels, seed) -> bytearray of the test chart. */
static PyObject *mod_chart(PyObject *Py_UNUSED(m), PyObject *args)
{
    int h, w, c;
    unsigned long seed;
    if (!PyArg_ParseTuple(args, "iiik", &h, &w, &c, &seed))
        return NULL;
    if (h < 1 || w < 1 || c < 1 || c > 4 || h > IC_MAX_DIM || w > IC_MAX_DIM)
        return raise_status(IC_ERR_INVALID_ARG, "chart size or channels out of range");
    PyObject *buf = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)h * w * c);
    if (!buf)
        return NULL;
    ic_image img;
    ic_status st = ic_image_wrap(&img, (uint8_t *)PyByteArray_AS_STRING(buf), w, h, c, IC_AOS, 0);
    if (st == IC_OK)
        st = ic_image_chart(&img, (uint32_t)seed);
    if (st != IC_OK) {
        Py_DECREF(buf);
        return raise_status(st, NULL);
    }
    return buf;
}

static PyObject *mod_status_names(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    PyObject *d = PyDict_New();
    for (int s = IC_OK; d && s <= IC_ERR_INTERNAL; s++) {
        PyObject *k = PyLong_FromLong(s), *v = PyUnicode_FromString(ic_status_str((ic_status)s));
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return d;
}

static PyMethodDef module_methods[] = {
    {"_set_error", mod_set_error, METH_O, "set the factory of the exceptions raised on failures"},
    {"version", mod_version, METH_NOARGS, "library version"},
    {"backends", mod_backends, METH_NOARGS, "[(name, summary, usable, why)]"},
    {"backend_auto", mod_backend_auto, METH_NOARGS, "the backend 'auto' picks here"},
    {"named_kernels", mod_named_kernels, METH_NOARGS, "[(name, args, summary)]"},
    {"load", mod_load, METH_VARARGS, "load an image file"},
    {"save", mod_save, METH_VARARGS, "save an image file atomically"},
    {"chart", mod_chart, METH_VARARGS, "the deterministic test chart"},
    {"status_names", mod_status_names, METH_NOARGS, "{code: description}"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT,
                                       "_imgconv",
                                       "Low-level binding of the imgconv C library.",
                                       -1,
                                       module_methods,
                                       NULL,
                                       NULL,
                                       NULL,
                                       NULL};

PyMODINIT_FUNC PyInit__imgconv(void)
{
    if (PyType_Ready(&KernelType) < 0 || PyType_Ready(&ContextType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "Kernel", (PyObject *)&KernelType) < 0 ||
        PyModule_AddObjectRef(m, "Context", (PyObject *)&ContextType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_KERNEL", IC_MAX_KERNEL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
