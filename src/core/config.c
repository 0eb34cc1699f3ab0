/* Environment variables, read once at initialization (DESIGN 2.9). */
#include "core.h"

core_config g_config;
int g_initialized;

static int64_t env_int(const char *name, int64_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end) {
        fprintf(stderr, "lazytensor: ignoring %s=%s (not an integer)\n", name, s);
        return dflt;
    }
    return v;
}

void core_init_slow(void) {
    g_initialized = 1;
    g_config.eager = (int)env_int("LT_EAGER", 0);
    g_config.max_pending = env_int("LT_MAX_PENDING_NODES", 1000000);
    if (g_config.max_pending < 16) g_config.max_pending = 16;
    g_config.cache_size = (int)env_int("LT_CACHE_SIZE", 1024);
    if (g_config.cache_size < 1) g_config.cache_size = 1;
    g_config.dispatch_trace = (int)env_int("LT_DISPATCH_TRACE", 0);
    g_config.metrics_at_exit = (int)env_int("LT_METRICS", 0);
    g_config.num_threads = (int)env_int("LT_NUM_THREADS", 0);
    int64_t mb = env_int("LT_DIST_BUCKET_MB", 4);
    g_config.dist_bucket_bytes = mb > 0 && mb < 1 << 20 ? (size_t)mb << 20 : 0;
    g_config.trace_kernels = (int)env_int("LT_TRACE_KERNELS", 0);
    g_config.bn_fuse = (int)env_int("LT_BN_FUSE", 2);
    g_config.wgrad_split = (int)env_int("LT_WGRAD_SPLIT", 1);
    g_config.conv_winograd = (int)env_int("LT_CONV_WINOGRAD", 1);
    int64_t smb = env_int("LT_BN_STREAM_MB", 4);
    g_config.bn_stream_bytes = smb >= 0 && smb < 1 << 20 ? (size_t)smb << 20 : SIZE_MAX;
    g_config.adapt_threads = (int)env_int("LT_ADAPT_THREADS", 1);
    const char *b = getenv("LT_BACKEND");
    g_config.backend = 0;
    if (b && !strcmp(b, "ref")) g_config.backend = 1;
    else if (b && *b && strcmp(b, "cpu"))
        fprintf(stderr, "lazytensor: unknown LT_BACKEND=%s (ref|cpu); using cpu\n", b);
    const char *d = getenv("LT_DUMP_IR");
    g_config.dump_ir_dir = d && *d ? d : NULL;
    const char *t = getenv("LT_TRACE_FILE");
    g_config.trace_file = t && *t ? t : NULL;
}
