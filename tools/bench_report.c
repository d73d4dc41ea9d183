/* vkattn bench: derived figures, the human table and the JSON / CSV files (see bench.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

const char *bench_mask_name(bench_mask mask)
{
    switch (mask) {
    case BENCH_MASK_NONE: return "none";
    case BENCH_MASK_CAUSAL: return "causal";
    case BENCH_MASK_PADDING: return "padding";
    case BENCH_MASK_CAUSAL_PADDING: return "causal+padding";
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

static void print_header(FILE *out, const bench_run_info *info)
{
    char device[900];
    cli_describe_device(&info->device, device, sizeof device);
    fprintf(out, "device: %s\n", device);
    if (info->device.type == VKATTN_DEVICE_CPU)
        fprintf(out, "        (a CPU implementation of Vulkan: these are not GPU figures)\n");
    fprintf(out, "kernels: %s profile\n", info->device.kernel_profile[0] ? info->device.kernel_profile : "?");
    const vkattn_peak *p = &info->peak;
    if (p->fp32_gflops > 0 || p->bandwidth_gbs > 0) {
        fprintf(out, "peak:   fp32 %.1f GFLOP/s, fp16 ", p->fp32_gflops);
        if (p->fp16_gflops > 0) fprintf(out, "%.1f GFLOP/s", p->fp16_gflops);
        else fprintf(out, "-");
        fprintf(out, ", bandwidth %.1f GB/s (measured by vkattn peak microkernels)\n", p->bandwidth_gbs);
    } else {
        fprintf(out, "peak:   not measured: no roofline percentages\n");
    }
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

static const char *device_type_name(vkattn_device_type t)
{
    switch (t) {
    case VKATTN_DEVICE_INTEGRATED_GPU: return "integrated_gpu";
    case VKATTN_DEVICE_DISCRETE_GPU: return "discrete_gpu";
    case VKATTN_DEVICE_VIRTUAL_GPU: return "virtual_gpu";
    case VKATTN_DEVICE_CPU: return "cpu";
    default: return "other";
    }
}

/* Writes `"name": value` (with a leading ", " unless first). */
static void json_field(FILE *f, int first, const char *name, const char *fmt, double v)
{
    fprintf(f, "%s\"%s\": ", first ? "" : ", ", name);
    cli_json_number(f, fmt, v);
}

static void json_result(FILE *f, const bench_result *r)
{
    const bench_config *c = &r->config;
    char key[160];
    bench_config_key(c, key, sizeof key);
    fprintf(f, "    {\"key\": ");
    cli_json_string(f, key);
    fprintf(f, ", \"batch\": %u, \"query_len\": %u, \"key_len\": %u, \"embed_dim\": %u, \"heads\": %u,\n", c->batch,
            c->query_len, c->key_len, c->embed_dim, c->heads);
    fprintf(f, "     \"active_heads\": %u,\n", c->head_mask ? c->active_heads : c->heads);
    fprintf(f, "     \"mask\": \"%s\", \"path\": \"%s\", \"path_ran\": \"%s\", \"dtype\": \"%s\",\n",
            bench_mask_name(c->mask), vkattn_path_name(c->path), vkattn_path_name(r->path_ran),
            vkattn_dtype_name(c->dtype));
    fprintf(f, "     \"repeats\": %u, \"dispatches\": %u, \"submits\": %u, \"workspace_bytes\": %llu,\n     ", r->repeats,
            r->dispatches, r->submits, (unsigned long long)r->workspace_bytes);
    json_field(f, 1, "gpu_ms_median", "%.9g", r->gpu.median_ms);
    json_field(f, 0, "gpu_ms_min", "%.9g", r->gpu.min_ms);
    json_field(f, 0, "host_ms_median", "%.9g", r->host.median_ms);
    json_field(f, 0, "host_ms_min", "%.9g", r->host.min_ms);
    fprintf(f, ",\n     ");
    json_field(f, 1, "host_overhead_ms_median", "%.9g", r->host_overhead.median_ms);
    json_field(f, 0, "host_overhead_ms_min", "%.9g", r->host_overhead.min_ms);
    fprintf(f, ",\n     ");
    json_field(f, 1, "flops", "%.17g", r->flops);
    json_field(f, 0, "bytes", "%.17g", r->bytes);
    json_field(f, 0, "gflops", "%.6g", r->gflops);
    json_field(f, 0, "gbs", "%.6g", r->gbs);
    json_field(f, 0, "roofline_pct", "%.6g", r->roofline_pct);
    json_field(f, 0, "cpu_ms", "%.9g", r->cpu_ms >= 0 ? r->cpu_ms : NAN);
    fprintf(f, ",\n     \"stages\": [");
    int first = 1;
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        const bench_stage_result *st = &r->stages[s];
        if (!st->present) continue;
        fprintf(f, "%s\n      {\"stage\": \"%s\", ", first ? "" : ",", vkattn_stage_name((vkattn_stage)s));
        json_field(f, 1, "ms_median", "%.9g", st->time.median_ms);
        json_field(f, 0, "ms_min", "%.9g", st->time.min_ms);
        json_field(f, 0, "flops", "%.17g", st->flops);
        json_field(f, 0, "bytes", "%.17g", st->bytes);
        json_field(f, 0, "gflops", "%.6g", st->gflops);
        json_field(f, 0, "gbs", "%.6g", st->gbs);
        json_field(f, 0, "roofline_pct", "%.6g", st->roofline_pct);
        fputc('}', f);
        first = 0;
    }
    fprintf(f, "%s]}", first ? "" : "\n     ");
}

/* Closes `f`, reporting any write error on the way (disk full shows up here). */
static int finish_file(FILE *f, const char *path, const char *what)
{
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) fprintf(stderr, "vkattn bench: writing the %s file %s failed\n", what, path);
    return bad;
}

int bench_write_json(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "vkattn bench: cannot create the JSON file %s\n", path);
        return 1;
    }
    const vkattn_device_info *d = &info->device;
    char api[32];
    snprintf(api, sizeof api, "%u.%u.%u", d->api_version >> 22, (d->api_version >> 12) & 0x3FFu,
             d->api_version & 0xFFFu);
    fprintf(f, "{\n  \"vkattn_version\": ");
    cli_json_string(f, vkattn_version_string());
    fprintf(f, ",\n  \"device\": {\"name\": ");
    cli_json_string(f, d->name);
    fprintf(f, ", \"driver_name\": ");
    cli_json_string(f, d->driver_name);
    fprintf(f, ", \"driver_info\": ");
    cli_json_string(f, d->driver_info);
    fprintf(f, ",\n             \"api_version\": \"%s\", \"type\": \"%s\", \"index\": %u, \"kernel_profile\": ", api,
            device_type_name(d->type), d->index);
    cli_json_string(f, d->kernel_profile);
    fprintf(f, "},\n  \"peak\": {");
    json_field(f, 1, "fp32_gflops", "%.6g", info->peak.fp32_gflops);
    json_field(f, 0, "fp16_gflops", "%.6g", info->peak.fp16_gflops);
    json_field(f, 0, "bandwidth_gbs", "%.6g", info->peak.bandwidth_gbs);
    fprintf(f, "},\n  ");
    json_field(f, 1, "min_time_s", "%.6g", info->min_time_s);
    fprintf(f, ",\n  \"preset\": ");
    if (info->preset) cli_json_string(f, info->preset);
    else fputs("null", f);
    fprintf(f, ",\n  \"results\": [");
    for (uint32_t i = 0; i < count; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_result(f, &results[i]);
    }
    fprintf(f, "%s]\n}\n", count ? "\n  " : "");
    return finish_file(f, path, "JSON");
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
