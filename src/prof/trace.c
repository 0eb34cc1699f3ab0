/* The Chrome trace event file behind LT_TRACE_FILE (opens in Perfetto and
 * chrome://tracing). Every span is a complete event ("ph": "X") written when
 * it ends, so an error path that returns early leaves no unclosed span and
 * the file stays well nested. Events are appended as they happen; the
 * closing brackets are written by prof_trace_close (at exit), which is what
 * makes the file valid JSON. */
#include "prof.h"

int g_prof_trace, g_prof_kernels;
static FILE *out;
static uint64_t origin;

static void put_escaped(const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
}

static void meta(const char *what, int tid, const char *name) {
    fprintf(out, ",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", what, tid,
            name);
}

int prof_trace_open(const char *path) {
    out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "lazytensor: cannot open LT_TRACE_FILE=%s; tracing is off\n", path);
        return -1;
    }
    origin = prof_now_ns();
    /* The first element is metadata, so every later event starts with ",". */
    fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    fprintf(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"lazytensor\"}}");
    meta("thread_name", TRACK_RUNTIME, "runtime");
    meta("thread_name", TRACK_USER, "user spans");
    for (int i = 0; i < TRACK_COMM_N; i++) {
        char name[32];
        snprintf(name, sizeof name, "collectives %d", i);
        meta("thread_name", TRACK_COMM + i, name);
    }
    g_prof_trace = 1;
    g_prof_kernels = g_config.trace_kernels != 0;
    return 0;
}

void prof_span_emit(enum prof_track track, const char *name, uint64_t t0, uint64_t t1, const char *args) {
    if (!out) return;
    if (t0 < origin) t0 = origin; /* a span that began before the file opened */
    if (t1 < t0) t1 = t0;
    fprintf(out, ",\n{\"name\":\"");
    put_escaped(name);
    /* Microseconds with nanosecond digits: the unit Chrome's format expects. */
    fprintf(out, "\",\"cat\":\"lt\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d",
            (double)(t0 - origin) / 1e3, (double)(t1 - t0) / 1e3, (int)track);
    if (args) fprintf(out, ",\"args\":{%s}", args);
    fputc('}', out);
}

/* ---- user spans ---- */
#define USER_MAX_DEPTH 64
static struct {
    char *name;
    uint64_t t0;
} user[USER_MAX_DEPTH];
static int user_depth, user_lost;

void prof_user_begin(const char *name) {
    if (!g_prof_trace) return;
    if (user_depth == USER_MAX_DEPTH) {
        user_lost++; /* too deep: dropped, but its lt_trace_end must still match */
        return;
    }
    const char *s = name ? name : "(null)";
    size_t n = strlen(s) + 1;
    char *copy = core_malloc(n);
    if (copy) memcpy(copy, s, n);
    user[user_depth].name = copy;
    user[user_depth].t0 = prof_now_ns();
    user_depth++;
}

void prof_user_end(void) {
    if (!g_prof_trace) return;
    if (user_lost) {
        user_lost--;
        return;
    }
    if (!user_depth) return; /* unmatched end: nothing to close */
    user_depth--;
    prof_span_emit(TRACK_USER, user[user_depth].name ? user[user_depth].name : "(out of memory)",
                   user[user_depth].t0, prof_now_ns(), NULL);
    core_free(user[user_depth].name);
}

void prof_trace_close(void) {
    if (!out) return;
    while (user_depth) prof_user_end(); /* still open at exit: end them now */
    fprintf(out, "\n]}\n");
    fclose(out);
    out = NULL;
    g_prof_trace = g_prof_kernels = 0;
}
