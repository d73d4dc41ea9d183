/* vkattn bench: derived figures, the human table and the JSON / CSV files (see bench.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "cli_json.h"

const char *bench_mask_name(bench_mask mask)
{
    switch (mask) {
    case BENCH_MASK_NONE: return "none";
    case BENCH_MASK_CAUSAL: return "causal";
    case BENCH_MASK_PADDING: return "padding";
    case BENCH_MASK_CAUSAL_PADDING: return "causal+padding";
    case BENCH_MASK_FLOAT_CAUSAL: return "float-causal";
    }
    return "unknown";
}

void bench_config_key(const bench_config *c, char *buf, size_t size)
{
    int n = snprintf(buf, size, "B%u_L%u_S%u_E%u_H%u_%s_%s_%s", c->batch, c->query_len, c->key_len, c->embed_dim,
                     c->heads, bench_mask_name(c->mask), vkattn_path_name(c->path), vkattn_dtype_name(c->dtype));
    if (c->head_mask && c->active_heads < c->heads && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "_active%u", c->active_heads);
}

/* GFLOP/s, GB/s and % of the roofline of `flops` and `bytes` done in `ms`. A stage with FLOPs is
 * bounded by min(peak FLOP/s, intensity * peak bandwidth); one without (softmax, averaging) only by
 * the bandwidth. Unknown peaks (zeros) give 0 %. */
static void derive(double flops, double bytes, double ms, const vkattn_peak *peak, double *gflops, double *gbs,
                   double *pct)
{
    *gflops = *gbs = *pct = 0;
    if (!(ms > 0)) return;
    *gflops = flops / (ms * 1e6);
    *gbs = bytes / (ms * 1e6);
    if (!peak) return;
    if (flops > 0) {
        if (!(peak->fp32_gflops > 0)) return;
        double attainable = peak->fp32_gflops;
        if (bytes > 0) {
            if (!(peak->bandwidth_gbs > 0)) return;
            double memory_bound = flops / bytes * peak->bandwidth_gbs;
            if (memory_bound < attainable) attainable = memory_bound;
        }
        *pct = 100.0 * *gflops / attainable;
    } else if (peak->bandwidth_gbs > 0) {
        *pct = 100.0 * *gbs / peak->bandwidth_gbs;
    }
}

void bench_derive(bench_result *r, const vkattn_peak *peak)
{
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        bench_stage_result *st = &r->stages[s];
        if (!st->present) {
            st->gflops = st->gbs = st->roofline_pct = 0;
            continue;
        }
        derive(st->flops, st->bytes, st->time.median_ms, peak, &st->gflops, &st->gbs, &st->roofline_pct);
    }
    derive(r->flops, r->bytes, r->gpu.median_ms, peak, &r->gflops, &r->gbs, &r->roofline_pct);
}

/* ---------------------------------------------------------------------------------------------- */
/* Table                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* Column widths of a configuration line; stage lines reuse them from the GPU time on. The config
 * part is CONFIG_WIDTH characters wide so stage lines can put their name and share there. */
#define CONFIG_WIDTH 54

void bench_print_device(FILE *out, const bench_run_info *info)
{
    char device[900];
    cli_describe_device(&info->device, device, sizeof device);
    fprintf(out, "device: %s\n", device);
    if (info->device.type == VKATTN_DEVICE_CPU)
        fprintf(out, "        (a CPU implementation of Vulkan: these are not GPU figures)\n");
    fprintf(out, "tuning: %s\n", info->device.tuning[0] ? info->device.tuning : "?");
    const vkattn_peak *p = &info->peak;
    if (p->fp32_gflops > 0 || p->bandwidth_gbs > 0) {
        fprintf(out, "peak:   fp32 %.1f GFLOP/s, fp16 ", p->fp32_gflops);
        if (p->fp16_gflops > 0) fprintf(out, "%.1f GFLOP/s", p->fp16_gflops);
        else fprintf(out, "-");
        fprintf(out, ", bandwidth %.1f GB/s (measured by vkattn peak microkernels)\n", p->bandwidth_gbs);
    } else {
        fprintf(out, "peak:   not measured: no roofline percentages\n");
    }
}

static void print_header(FILE *out, const bench_run_info *info)
{
    bench_print_device(out, info);
    fprintf(out, "timing: median and min of GPU timestamps over repeats for at least %.2f s per configuration",
            info->min_time_s);
    if (info->preset) fprintf(out, "; preset %s", info->preset);
    fprintf(out, "\n\n");
    fprintf(out, "%2s %6s %6s %4s %3s %-14s %-7s %-5s %8s %8s %8s %7s %5s %7s %8s %7s\n", "B", "L", "S", "E", "H",
            "mask", "path", "dtype", "GPU ms", "min ms", "GFLOP/s", "GB/s", "roof%", "host+ms", "CPU ms", "vs CPU");
    fprintf(out, "   stage lines: share of the forward's median GPU time, then the same columns\n");
}

/* A number in `width` columns, or "-" when `show` is false. */
static void print_num(FILE *out, int width, int decimals, double v, int show)
{
    if (show && isfinite(v)) fprintf(out, " %*.*f", width, decimals, v);
    else fprintf(out, " %*s", width, "-");
}

/* A rate with as many decimals as small figures need (lavapipe runs small shapes at < 1 GB/s). */
static void print_rate(FILE *out, int width, double v, int show)
{
    print_num(out, width, v >= 100 ? 1 : v >= 1 ? 2 : 3, v, show);
}

static void print_result(FILE *out, const bench_result *r)
{
    const bench_config *c = &r->config;
    const int has_peak = r->roofline_pct > 0;
    fprintf(out, "%2u %6u %6u %4u %3u %-14s %-7s %-5s", c->batch, c->query_len, c->key_len, c->embed_dim, c->heads,
            bench_mask_name(c->mask), vkattn_path_name(c->path), vkattn_dtype_name(c->dtype));
    print_num(out, 8, 3, r->gpu.median_ms, 1);
    print_num(out, 8, 3, r->gpu.min_ms, 1);
    print_rate(out, 8, r->gflops, 1);
    print_rate(out, 7, r->gbs, 1);
    print_num(out, 5, 1, r->roofline_pct, has_peak);
    print_num(out, 7, 3, r->host_overhead.median_ms, 1);
    print_num(out, 8, 1, r->cpu_ms, r->cpu_ms >= 0);
    if (r->cpu_ms >= 0 && r->gpu.median_ms > 0) fprintf(out, " %6.1fx\n", r->cpu_ms / r->gpu.median_ms);
    else fprintf(out, " %7s\n", "-");
    if (r->path_ran != c->path) fprintf(out, "      (ran the %s path)\n", vkattn_path_name(r->path_ran));

    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        const bench_stage_result *st = &r->stages[s];
        if (!st->present) continue;
        double share = r->gpu.median_ms > 0 ? 100.0 * st->time.median_ms / r->gpu.median_ms : 0;
        fprintf(out, "      %-*s %6.1f%%", CONFIG_WIDTH - 6 - 8, vkattn_stage_name((vkattn_stage)s), share);
        print_num(out, 8, 3, st->time.median_ms, 1);
        print_num(out, 8, 3, st->time.min_ms, 1);
        print_rate(out, 8, st->gflops, st->flops > 0);
        print_rate(out, 7, st->gbs, 1);
        print_num(out, 5, 1, st->roofline_pct, st->roofline_pct > 0 || has_peak);
        fputc('\n', out);
    }
}

void bench_print_table(FILE *out, const bench_run_info *info, const bench_result *results, uint32_t count)
{
    print_header(out, info);
    for (uint32_t i = 0; i < count; i++) print_result(out, &results[i]);
    if (count == 0) fprintf(out, "(no configuration ran)\n");
}

/* ---------------------------------------------------------------------------------------------- */
/* JSON and CSV                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

static cJSON *json_stage(const bench_stage_result *st, vkattn_stage s)
{
    const cli_json_num numbers[] = {{"ms_median", st->time.median_ms}, {"ms_min", st->time.min_ms},
                                   {"flops", st->flops}, {"bytes", st->bytes}, {"gflops", st->gflops},
                                   {"gbs", st->gbs}, {"roofline_pct", st->roofline_pct}};
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "stage", vkattn_stage_name(s)) && !cli_json_add_numbers(o, numbers, CLI_COUNT(numbers)))
        return o;
    cJSON_Delete(o);
    return NULL;
}

static cJSON *json_result(const bench_result *r)
{
    const bench_config *c = &r->config;
    char key[160];
    bench_config_key(c, key, sizeof key);
    const cli_json_num shape[] = {{"batch", c->batch}, {"query_len", c->query_len}, {"key_len", c->key_len},
                                 {"embed_dim", c->embed_dim}, {"heads", c->heads},
                                 {"active_heads", c->head_mask ? c->active_heads : c->heads}};
    const cli_json_str names[] = {{"mask", bench_mask_name(c->mask)}, {"path", vkattn_path_name(c->path)},
                                 {"path_ran", vkattn_path_name(r->path_ran)}, {"dtype", vkattn_dtype_name(c->dtype)}};
    const cli_json_num figures[] = {
        {"repeats", r->repeats}, {"dispatches", r->dispatches}, {"submits", r->submits},
        {"workspace_bytes", (double)r->workspace_bytes}, {"gpu_ms_median", r->gpu.median_ms},
        {"gpu_ms_min", r->gpu.min_ms}, {"host_ms_median", r->host.median_ms}, {"host_ms_min", r->host.min_ms},
        {"host_overhead_ms_median", r->host_overhead.median_ms}, {"host_overhead_ms_min", r->host_overhead.min_ms},
        {"flops", r->flops}, {"bytes", r->bytes}, {"gflops", r->gflops}, {"gbs", r->gbs},
        {"roofline_pct", r->roofline_pct}, {"cpu_ms", r->cpu_ms >= 0 ? r->cpu_ms : NAN}};
    cJSON *o = cJSON_CreateObject(), *stages = NULL;
    int bad = !o || !cJSON_AddStringToObject(o, "key", key) || cli_json_add_numbers(o, shape, CLI_COUNT(shape)) ||
              cli_json_add_strings(o, names, CLI_COUNT(names)) || cli_json_add_numbers(o, figures, CLI_COUNT(figures)) ||
              !(stages = cJSON_AddArrayToObject(o, "stages"));
    for (int s = 0; !bad && s < VKATTN_STAGE_COUNT; s++)
        if (r->stages[s].present) bad = cli_json_append(stages, json_stage(&r->stages[s], (vkattn_stage)s));
    if (!bad) return o;
    cJSON_Delete(o);
    return NULL;
}

/* The run's description: version, device, peak, timing and preset. */
int bench_json_run_info(cJSON *root, const bench_run_info *info)
{
    const vkattn_device_info *d = &info->device;
    char api[32];
    snprintf(api, sizeof api, "%u.%u.%u", d->api_version >> 22, (d->api_version >> 12) & 0x3FFu,
             d->api_version & 0xFFFu);
    const cli_json_str device_names[] = {{"name", d->name}, {"driver_name", d->driver_name},
                                        {"driver_info", d->driver_info}, {"api_version", api},
                                        {"type", cli_device_type_name(d->type, 1)}};
    const cli_json_num peak[] = {{"fp32_gflops", info->peak.fp32_gflops}, {"fp16_gflops", info->peak.fp16_gflops},
                                {"bandwidth_gbs", info->peak.bandwidth_gbs}};
    cJSON *device = NULL, *peak_obj = NULL;
    cJSON *preset = info->preset ? cJSON_CreateString(info->preset) : cJSON_CreateNull();
    if (!preset || !cJSON_AddStringToObject(root, "vkattn_version", vkattn_version_string()) ||
        !(device = cJSON_AddObjectToObject(root, "device")) ||
        cli_json_add_strings(device, device_names, CLI_COUNT(device_names)) || !cJSON_AddNumberToObject(device, "index", d->index) ||
        !cJSON_AddStringToObject(device, "tuning", d->tuning) ||
        !(peak_obj = cJSON_AddObjectToObject(root, "peak")) || cli_json_add_numbers(peak_obj, peak, CLI_COUNT(peak)) ||
        !cli_json_add_number(root, "min_time_s", info->min_time_s) || !cJSON_AddItemToObject(root, "preset", preset)) {
        cJSON_Delete(preset); /* not added: still ours */
        return 1;
    }
    return 0;
}

int bench_write_json(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count)
{
    cJSON *root = cJSON_CreateObject(), *list = NULL;
    int bad = !root || bench_json_run_info(root, info) || !(list = cJSON_AddArrayToObject(root, "results"));
    for (uint32_t i = 0; !bad && i < count; i++) bad = cli_json_append(list, json_result(&results[i]));
    char err[600];
    if (bad) snprintf(err, sizeof err, "out of memory for the JSON file %s", path);
    else bad = cli_json_write_file(root, path, err, sizeof err);
    cJSON_Delete(root);
    if (bad) fprintf(stderr, "vkattn bench: %s\n", err);
    return bad;
}

/* Closes `f`, reporting any write error on the way (disk full shows up here). */
static int finish_file(FILE *f, const char *path, const char *what)
{
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) fprintf(stderr, "vkattn bench: writing the %s file %s failed\n", what, path);
    return bad;
}

/* A CSV field: quoted (quotes doubled) when it holds a comma, quote or line break. */
static void csv_string(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_number(FILE *f, const char *fmt, double v)
{
    fputc(',', f);
    if (isfinite(v)) fprintf(f, fmt, v);
}

/* One row: the configuration, then `stage` and its figures; the whole-forward extras (host
 * overhead, CPU time) only on the "total" row. */
static void csv_row(FILE *f, const bench_run_info *info, const bench_result *r, const char *stage,
                    const bench_time *t, double flops, double bytes, double gflops, double gbs, double pct)
{
    const bench_config *c = &r->config;
    char key[160];
    bench_config_key(c, key, sizeof key);
    csv_string(f, info->device.name);
    fprintf(f, ",%s,%u,%u,%u,%u,%u,%s,%s,%s,%s,%s", key, c->batch, c->query_len, c->key_len, c->embed_dim,
            c->heads, bench_mask_name(c->mask), vkattn_path_name(c->path), vkattn_path_name(r->path_ran),
            vkattn_dtype_name(c->dtype), stage);
    csv_number(f, "%.9g", t->median_ms);
    csv_number(f, "%.9g", t->min_ms);
    csv_number(f, "%.17g", flops);
    csv_number(f, "%.17g", bytes);
    csv_number(f, "%.6g", gflops);
    csv_number(f, "%.6g", gbs);
    csv_number(f, "%.6g", pct);
    const int total = strcmp(stage, "total") == 0;
    csv_number(f, "%.6g", r->gpu.median_ms > 0 ? 100.0 * t->median_ms / r->gpu.median_ms : NAN);
    csv_number(f, "%.9g", total ? r->host_overhead.median_ms : NAN);
    csv_number(f, "%.9g", total && r->cpu_ms >= 0 ? r->cpu_ms : NAN);
    fputc('\n', f);
}

int bench_write_csv(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "vkattn bench: cannot create the CSV file %s\n", path);
        return 1;
    }
    fprintf(f, "device,key,batch,query_len,key_len,embed_dim,heads,mask,path,path_ran,dtype,stage,ms_median,ms_min,"
               "flops,bytes,gflops,gbs,roofline_pct,share_pct,host_overhead_ms_median,cpu_ms\n");
    for (uint32_t i = 0; i < count; i++) {
        const bench_result *r = &results[i];
        csv_row(f, info, r, "total", &r->gpu, r->flops, r->bytes, r->gflops, r->gbs, r->roofline_pct);
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
            const bench_stage_result *st = &r->stages[s];
            if (st->present)
                csv_row(f, info, r, vkattn_stage_name((vkattn_stage)s), &st->time, st->flops, st->bytes, st->gflops,
                        st->gbs, st->roofline_pct);
        }
    }
    return finish_file(f, path, "CSV");
}
