/* vkattn bench --compare OLD.json NEW.json: per-configuration speed ratios between two runs.
 *
 * Configurations are matched by their "key" (bench_config_key; a decode run's points get one from
 * their layer, cache format, context and kv_splits, see decode_results). The ratio is old time / new time,
 * so > 1 means NEW is faster; the summary is the geometric mean of the whole-forward ratios, the
 * mean that treats a 2x gain and a 2x loss as cancelling out. The files are read with cJSON
 * (cli_json.h); tests/fuzz/fuzz_bench_json.c fuzzes this loader.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli_json.h"

#define KEY_WIDTH 54

typedef struct cmp_entry {
    const char *key;
    const cJSON *result;
    size_t index; /* position in the file */
} cmp_entry;

typedef struct cmp_file {
    const char *path;
    cJSON *doc;
    const cJSON *results; /* the entries in file order */
    cJSON *decode;        /* a decode run's points as entries (owned), or NULL */
    const char *device, *type, *driver_name, *driver_info, *tuning;
    cmp_entry *sorted;    /* by key, then file order */
    size_t count;
} cmp_file;

static int entry_order(const void *pa, const void *pb)
{
    const cmp_entry *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* The first entry (in file order) with `key`, or NULL. */
static const cmp_entry *find(const cmp_file *f, const char *key)
{
    size_t lo = 0, hi = f->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(f->sorted[mid].key, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < f->count && strcmp(f->sorted[lo].key, key) == 0 ? &f->sorted[lo] : NULL;
}

static int bad(const cmp_file *f, const char *what, size_t index)
{
    if (index == (size_t)-1) fprintf(stderr, "vkattn bench --compare: %s: %s\n", f->path, what);
    else fprintf(stderr, "vkattn bench --compare: %s: results[%zu]: %s\n", f->path, index, what);
    return 1;
}

/* The member `name` of an object, or NULL. */
static const cJSON *member(const cJSON *obj, const char *name)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

/* A time member: a number, or null (not measured). Anything else is an error. */
static int check_time(const cJSON *obj, const char *name)
{
    const cJSON *v = member(obj, name);
    return cJSON_IsNumber(v) || cJSON_IsNull(v);
}

static int check_result(const cmp_file *f, const cJSON *r, size_t i)
{
    if (!cJSON_IsObject(r)) return bad(f, "not an object", i);
    if (!cli_json_string(r, "key")) return bad(f, "\"key\" is missing or not a string", i);
    if (!check_time(r, "gpu_ms_median")) return bad(f, "\"gpu_ms_median\" is missing or not a number", i);
    const cJSON *stages = member(r, "stages"), *s;
    if (!cJSON_IsArray(stages)) return bad(f, "\"stages\" is missing or not an array", i);
    cJSON_ArrayForEach(s, stages) {
        if (!cJSON_IsObject(s) || !cli_json_string(s, "stage") || !check_time(s, "ms_median"))
            return bad(f, "a stage entry lacks a \"stage\" name or a \"ms_median\" time", i);
    }
    return 0;
}

/* Adds a copy of `value` to `object` as `name`: 0, or 1 when out of memory. */
static int add_copy(cJSON *object, const char *name, const cJSON *value)
{
    cJSON *v = cJSON_Duplicate(value, 0);
    if (v && cJSON_AddItemToObject(object, name, v)) return 0;
    cJSON_Delete(v);
    return 1;
}

/* A count in a decode run's key: a whole number that fits 32 bits (1.5 would print as 2, 1e300 as
 * 301 digits: two points could then share a key). */
static int key_count(double x)
{
    return x >= 0 && x <= 4294967295.0 && x == (double)(uint64_t)x;
}

/* A decode run's points (`vkattn bench --preset decode --json`) as entries, into f->decode: the key
 * names the layer, the cache's format, the context and kv_splits; the step's GPU time compares as
 * the whole forward, and the QKV, attention and output stages and the host's time per token as its
 * stages. */
static int decode_results(cmp_file *f, const cJSON *layer, const cJSON *points)
{
    static const struct {
        const char *field, *stage;
    } stages[] = {{"qkv_projection_ms", "qkv_projection"},
                  {"attention_ms", "attention"},
                  {"out_projection_ms", "out_projection"},
                  {"ms_per_token_median", "host ms/token"}};
    static const char *const dims[] = {"embed_dim", "heads", "kv_heads", "head_dim", "window"};
    double dim[5];
    for (int d = 0; d < 5; d++) {
        int ok;
        dim[d] = cli_json_number(layer, dims[d], &ok);
        if (!ok) return bad(f, "a decode run's \"layer\" lacks embed_dim, heads, kv_heads, head_dim or window", (size_t)-1);
        if (!key_count(dim[d]))
            return bad(f, "a decode run's \"layer\" has an embed_dim, heads, kv_heads, head_dim or window that is not "
                          "a whole number below 2^32", (size_t)-1);
    }
    if (!cJSON_IsArray(points)) return bad(f, "a decode run without a \"points\" array", (size_t)-1);
    char window[40] = "";
    if (dim[4] != 0) snprintf(window, sizeof window, "_window%.0f", dim[4]);
    if (!(f->decode = cJSON_CreateArray())) return bad(f, "out of memory", (size_t)-1);
    size_t i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, points) {
        int ok_ctx, ok_splits;
        const char *dtype = cli_json_string(p, "cache_dtype");
        double ctx = cli_json_number(p, "ctx", &ok_ctx), splits = cli_json_number(p, "kv_splits", &ok_splits);
        if (!dtype || !ok_ctx || !ok_splits)
            return bad(f, "a decode point (of \"points\") lacks \"cache_dtype\", \"ctx\" or \"kv_splits\"", i);
        if (!key_count(ctx) || !key_count(splits))
            return bad(f, "a decode point's \"ctx\" or \"kv_splits\" is not a whole number below 2^32", i);
        if (!check_time(p, "gpu_ms_median"))
            return bad(f, "a decode point's \"gpu_ms_median\" is missing or not a number", i);
        for (size_t k = 0; k < sizeof stages / sizeof stages[0]; k++)
            if (!check_time(p, stages[k].field)) return bad(f, "a decode point's stage time is missing or not a number", i);
        char key[200], split[40] = "auto";
        if (splits != 0) snprintf(split, sizeof split, "%.0f", splits);
        snprintf(key, sizeof key, "decode_E%.0f_H%.0f_Hkv%.0f_D%.0f%s_%.16s_ctx%.0f_split_%s", dim[0], dim[1], dim[2],
                 dim[3], window, dtype, ctx, split);
        cJSON *r = cJSON_CreateObject(), *list = NULL;
        if (cli_json_append(f->decode, r) || !cJSON_AddStringToObject(r, "key", key) ||
            add_copy(r, "gpu_ms_median", member(p, "gpu_ms_median")) ||
            !(list = cJSON_AddArrayToObject(r, "stages")))
            return bad(f, "out of memory", (size_t)-1);
        for (size_t k = 0; k < sizeof stages / sizeof stages[0]; k++) {
            cJSON *stage = cJSON_CreateObject();
            if (cli_json_append(list, stage) || !cJSON_AddStringToObject(stage, "stage", stages[k].stage) ||
                add_copy(stage, "ms_median", member(p, stages[k].field)))
                return bad(f, "out of memory", (size_t)-1);
        }
        i++;
    }
    return 0;
}

static int load(cmp_file *f, const char *path)
{
    char err[600];
    memset(f, 0, sizeof *f);
    f->path = path;
    if (!(f->doc = cli_json_read_file(path, err, sizeof err))) {
        fprintf(stderr, "vkattn bench --compare: %s\n", err);
        return 1;
    }
    const cJSON *root = f->doc, *device = member(root, "device"), *results = member(root, "results"), *r;
    if (!cJSON_IsObject(root)) return bad(f, "the top level is not an object", (size_t)-1);
    if (!(f->device = cli_json_string(device, "name")))
        return bad(f, "no \"device\" object with a \"name\" string (not a vkattn bench --json file?)", (size_t)-1);
    f->type = cli_json_string(device, "type");
    f->driver_name = cli_json_string(device, "driver_name");
    f->driver_info = cli_json_string(device, "driver_info");
    f->tuning = cli_json_string(device, "tuning");
    if (!results && cli_json_string(root, "preset") && strcmp(cli_json_string(root, "preset"), "decode") == 0) {
        if (decode_results(f, member(root, "layer"), member(root, "points"))) return 1;
        results = f->decode;
    }
    if (!cJSON_IsArray(results)) return bad(f, "no \"results\" array", (size_t)-1);
    f->results = results;
    if (!(f->sorted = calloc((size_t)cJSON_GetArraySize(results) + 1, sizeof *f->sorted)))
        return bad(f, "out of memory", (size_t)-1);
    cJSON_ArrayForEach(r, results) {
        if (check_result(f, r, f->count)) return 1;
        f->sorted[f->count] = (cmp_entry){cli_json_string(r, "key"), r, f->count};
        f->count++;
    }
    qsort(f->sorted, f->count, sizeof *f->sorted, entry_order);
    for (size_t i = 1; i < f->count; i++)
        if (strcmp(f->sorted[i].key, f->sorted[i - 1].key) == 0 &&
            (i < 2 || strcmp(f->sorted[i].key, f->sorted[i - 2].key) != 0))
            fprintf(stderr, "vkattn bench --compare: %s: warning: key %s appears more than once; using the first\n",
                    path, f->sorted[i].key);
    return 0;
}

static void unload(cmp_file *f)
{
    cJSON_Delete(f->decode);
    cJSON_Delete(f->doc);
    free(f->sorted);
}

static void describe(FILE *out, const char *which, const cmp_file *f)
{
    fprintf(out, "%s: %s: %s [%s, driver %s %s] kernels %s\n", which, f->path, f->device, f->type ? f->type : "?",
            f->driver_name && *f->driver_name ? f->driver_name : "unknown", f->driver_info ? f->driver_info : "",
            f->tuning ? f->tuning : "?");
}

/* A time in ms, or -1 when null or not positive (then no ratio is computed). */
static double time_of(const cJSON *obj, const char *name)
{
    int ok;
    double v = cli_json_number(obj, name, &ok);
    return ok && v > 0 ? v : -1;
}

/* Prints one row and returns the ratio, or -1 when either time is missing. */
static double row(FILE *out, int indent, const char *name, double old_ms, double new_ms)
{
    fprintf(out, "%*s%-*s", indent, "", KEY_WIDTH - indent, name);
    if (old_ms > 0) fprintf(out, " %11.4f", old_ms);
    else fprintf(out, " %11s", "-");
    if (new_ms > 0) fprintf(out, " %11.4f", new_ms);
    else fprintf(out, " %11s", "-");
    double ratio = old_ms > 0 && new_ms > 0 ? old_ms / new_ms : -1;
    if (ratio > 0) fprintf(out, " %9.3f\n", ratio);
    else fprintf(out, " %9s\n", "-");
    return ratio;
}

static void compare_stages(FILE *out, const cJSON *old_r, const cJSON *new_r)
{
    const cJSON *old_stages = member(old_r, "stages"), *new_stages = member(new_r, "stages"), *s, *t;
    cJSON_ArrayForEach(s, old_stages) {
        const char *name = cli_json_string(s, "stage");
        cJSON_ArrayForEach(t, new_stages) {
            if (strcmp(name, cli_json_string(t, "stage")) != 0) continue;
            row(out, 4, name, time_of(s, "ms_median"), time_of(t, "ms_median"));
            break;
        }
    }
}

static int same(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

int bench_compare(FILE *out, const char *old_path, const char *new_path)
{
    cmp_file old_f, new_f;
    int rc = 1;
    if (load(&old_f, old_path)) {
        unload(&old_f);
        return 1;
    }
    if (load(&new_f, new_path)) goto done;

    describe(out, "old", &old_f);
    describe(out, "new", &new_f);
    if (!same(old_f.device, new_f.device))
        fprintf(out, "WARNING: the files come from different devices (\"%s\" and \"%s\"): "
                     "ratios across devices are not meaningful\n", old_f.device, new_f.device);
    else if (!same(old_f.driver_name, new_f.driver_name) || !same(old_f.driver_info, new_f.driver_info))
        fprintf(out, "note: same device, different drivers\n");
    if (!same(old_f.tuning, new_f.tuning))
        fprintf(out, "note: different tunings (%s and %s)\n", old_f.tuning ? old_f.tuning : "?",
                new_f.tuning ? new_f.tuning : "?");

    fprintf(out, "\n%-*s %11s %11s %9s\n", KEY_WIDTH, "configuration / stage", "old ms", "new ms", "old/new");
    size_t matched = 0, rated = 0;
    double log_sum = 0;
    size_t i = 0;
    for (const cJSON *o = old_f.results->child; o; o = o->next, i++) {
        const char *key = cli_json_string(o, "key");
        const cmp_entry *n = find(&new_f, key);
        if (!n || find(&old_f, key)->index != i) continue; /* only in OLD, or a later duplicate */
        matched++;
        double ratio = row(out, 0, key, time_of(o, "gpu_ms_median"), time_of(n->result, "gpu_ms_median"));
        if (ratio > 0) log_sum += log(ratio), rated++;
        compare_stages(out, o, n->result);
    }
    if (rated)
        fprintf(out, "\ngeometric mean of the whole-forward ratios over %zu configuration%s: %.3f "
                     "(> 1: new is faster)\n", rated, rated == 1 ? "" : "s", exp(log_sum / (double)rated));
    else fprintf(out, "\ngeometric mean of the whole-forward ratios: n/a (no configuration has both times)\n");

    for (int k = 0; k < 2; k++) {
        const cmp_file *f = k ? &new_f : &old_f, *other = k ? &old_f : &new_f;
        const cJSON *r;
        cJSON_ArrayForEach(r, f->results)
            if (!find(other, cli_json_string(r, "key"))) fprintf(out, "only in %s: %s\n", f->path, cli_json_string(r, "key"));
    }
    if (matched == 0) {
        fprintf(stderr, "vkattn bench --compare: no configuration key is in both %s and %s\n", old_path, new_path);
        goto done;
    }
    rc = 0;
done:
    unload(&old_f);
    unload(&new_f);
    return rc;
}
