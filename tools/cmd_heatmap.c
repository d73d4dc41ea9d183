/* vkattn heatmap: one batch item's attention weights as a PNG, one panel per head, from a forward
 * (the same inputs as vkattn run) or from a per-head weights .npy. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"
#include "cli.h"
#include "cli_json.h"
#include "forward_inputs.h"
#include "heatmap.h"

#define TOKEN_FILE_MAX (64u << 20) /* bytes */
#define HEATMAP_MAX_CELLS_TEXT "1024"
_Static_assert(HEATMAP_MAX_CELLS == 1024, "--cell's help states HEATMAP_MAX_CELLS");

typedef struct heatmap_options {
    forward_options fwd;
    const char *from_npy, *out, *tokens, *query_tokens, *key_tokens;
    uint32_t batch_index, heads_per_row, cell;
    int zeros_masked, scale_one;
} heatmap_options;

#define M(field) offsetof(heatmap_options, field)
static const cli_option k_heatmap_rows[] = {
    {"--out", "FILE.png", "the picture", CLI_TEXT, M(out), .flags = CLI_REQUIRED},
    {"--from-npy", "a.npy", "draw float32 weights (B, H, L, S) or (H, L, S) from a file instead of running a forward; "
     "NaN counts as masked", CLI_TEXT, M(from_npy)},
    {"--zeros-masked", NULL, "(with --from-npy) exact zeros count as masked too", CLI_FLAG, M(zeros_masked)},
    {"--batch-index", "N", "the batch item to draw (default 0)", CLI_U32, M(batch_index), 0},
    {"--tokens", "FILE", "labels for both axes, one token per line (self-attention)", CLI_TEXT, M(tokens)},
    {"--query-tokens", "FILE", "labels for the query axis", CLI_TEXT, M(query_tokens)},
    {"--key-tokens", "FILE", "labels for the key axis", CLI_TEXT, M(key_tokens)},
    {"--heads-per-row", "N", "panels per row (default ceil(sqrt(H)))", CLI_U32, M(heads_per_row), 1},
    {"--cell", "PX", "pixels per cell (default: panels of about 128..256 pixels; an axis longer than "
     HEATMAP_MAX_CELLS_TEXT " positions is averaged down to at most " HEATMAP_MAX_CELLS_TEXT " cells, as the title "
     "then says)", CLI_U32, M(cell), 1},
    {"--scale-one", NULL, "colour scale 0..1 (default 0..the largest weight shown)", CLI_FLAG, M(scale_one)},
};

static int usage_error(const char *message)
{
    fprintf(stderr, "vkattn heatmap: %s\n", message);
    return 2;
}

static int check_options(const heatmap_options *o, const char *forward_input)
{
    if (canvas_format_of(o->out) != CANVAS_PNG) {
        fprintf(stderr, "vkattn heatmap: --out %s: heatmap writes PNG only; give a file name ending in .png\n", o->out);
        return 2;
    }
    if (o->from_npy && forward_input)
        return usage_error("--from-npy reads weights from a file; it takes none of the forward inputs");
    if (o->fwd.path_given && o->fwd.path == VKATTN_PATH_FUSED)
        return usage_error("the fused path returns no attention weights; heatmap runs the unfused path");
    if (o->zeros_masked && !o->from_npy)
        return usage_error("--zeros-masked is for --from-npy; a forward knows its masks");
    if (o->tokens && (o->query_tokens || o->key_tokens))
        return usage_error("--tokens labels both axes; use it or --query-tokens/--key-tokens, not both");
    if (o->cell > HEATMAP_MAX_CELL_PX) {
        fprintf(stderr, "vkattn heatmap: --cell %u is larger than the limit %u\n", o->cell, HEATMAP_MAX_CELL_PX);
        return 2;
    }
    return 0;
}

static int parse(int argc, char **argv, heatmap_options *o)
{
    cli_command c = {"heatmap", "--out FILE.png (FORWARD INPUTS | --from-npy a.npy) [options]",
                     "The forward runs on the unfused path, which returns per-head weights (--cpu: the CPU reference).\n"
                     "Keys the masks exclude are drawn hatched grey (\"masked\"), unlike a zero weight (dark purple).\n"
                     "--out is checked before anything runs.\n" FORWARD_NOTES CLI_EXIT_HELP,
                     {FORWARD_GROUP(o->fwd), {"heatmap", k_heatmap_rows, CLI_COUNT(k_heatmap_rows), o}},
                     .unless = "--from-npy"};
    int rc = cli_parse(&c, argc, argv);
    return rc ? rc : check_options(o, cli_group_given(&c, 0));
}

/* ---------------------------------------------------------------------------------------------- */
/* Where the weights come from                                                                     */
/* ---------------------------------------------------------------------------------------------- */

/* One batch item's weights (H, L, S) and which of them are masked, released by source_free. */
typedef struct heatmap_source {
    vkattn_array npy;     /* --from-npy: the whole file */
    forward_inputs in;    /* a forward: its inputs */
    float *output;        /* a forward: (B,L,E), not drawn */
    float *all_weights;   /* a forward: (B,H,L,S') */
    uint8_t *masked;      /* (H,L,S) of the item; NULL = none masked */
    const float *weights; /* (H,L,S) of the item, inside npy or all_weights */
    uint32_t B, H, L, S;  /* S: the keys drawn (S' for a forward) */
    uint32_t plain_keys;  /* keys before add_bias_kv / add_zero_attn (= S from a file) */
    char what[200];       /* where the weights came from, for the title */
} heatmap_source;

static void source_free(heatmap_source *s)
{
    vkattn_array_free(&s->npy);
    forward_inputs_free(&s->in);
    free(s->output), free(s->all_weights), free(s->masked);
}

static int batch_in_range(uint32_t index, uint32_t batch)
{
    if (index < batch) return 0;
    fprintf(stderr, "vkattn heatmap: --batch-index %u is out of range: there %s %u batch item%s (0..%u)\n", index,
            batch == 1 ? "is" : "are", batch, batch == 1 ? "" : "s", batch - 1);
    return 2;
}

static int source_from_npy(const heatmap_options *o, heatmap_source *s)
{
    vkattn_error error = {0};
    vkattn_status status = vkattn_npy_read(o->from_npy, &s->npy, &error);
    if (status != VKATTN_OK)
        return cli_fail_input("heatmap", "--from-npy", o->from_npy, CLI_FILE_NPY, status, error.message);
    const vkattn_array *a = &s->npy;
    if (a->dtype != VKATTN_DTYPE_F32 || (a->rank != 3 && a->rank != 4)) {
        fprintf(stderr,
                "vkattn heatmap: %s has dtype %s and rank %u; --from-npy takes per-head attention weights, "
                "float32 (B,H,L,S) or (H,L,S)\n",
                o->from_npy, vkattn_dtype_name(a->dtype), a->rank);
        return 1;
    }
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] == 0) { /* numpy writes empty arrays; there is nothing to draw */
            char shape[128];
            cli_format_shape(shape, sizeof shape, a->rank, a->dims);
            fprintf(stderr, "vkattn heatmap: %s has shape %s, which holds no attention weights\n", o->from_npy, shape);
            return 1;
        }
    int four = a->rank == 4;
    s->B = four ? a->dims[0] : 1;
    s->H = a->dims[four], s->L = a->dims[four + 1], s->S = s->plain_keys = a->dims[four + 2];
    int rc = batch_in_range(o->batch_index, s->B);
    if (rc) return rc;
    size_t item = (size_t)s->H * s->L * s->S;
    s->weights = (const float *)a->data + o->batch_index * item;
    if (o->zeros_masked) {
        if (!(s->masked = malloc(item)))
            return cli_fail("heatmap", "allocating the mask", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        for (size_t k = 0; k < item; k++) s->masked[k] = s->weights[k] == 0.0f;
    }
    const char *base = strrchr(o->from_npy, '/');
    snprintf(s->what, sizeof s->what, "from %s", base ? base + 1 : o->from_npy);
    return 0;
}

/* Loads and checks the forward's inputs; forward_run runs it once the labels are known to fit. */
static int source_from_forward(const heatmap_options *o, heatmap_source *s)
{
    forward_inputs *in = &s->in;
    int rc;
    if ((rc = forward_inputs_load("heatmap", &o->fwd, in)) || (rc = batch_in_range(o->batch_index, in->B)))
        return rc;
    s->B = in->B, s->H = in->H, s->L = in->L, s->S = in->S_ext, s->plain_keys = in->S;
    return 0;
}

static int forward_run(const heatmap_options *o, heatmap_source *s)
{
    forward_inputs *in = &s->in;
    int rc;
    size_t item = (size_t)s->H * s->L * s->S;
    s->output = malloc((size_t)in->B * in->L * in->E * sizeof(float));
    s->all_weights = malloc(in->B * item * sizeof(float));
    s->masked = malloc(item);
    if (!s->output || !s->all_weights || !s->masked)
        return cli_fail("heatmap", "allocating outputs", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    vkattn_host_forward_desc f = in->desc;
    f.output = s->output;
    f.attn_weights = s->all_weights;
    f.average_weights = 0;
    f.path = VKATTN_PATH_UNFUSED; /* the path that returns per-head weights */
    forward_inputs_print_shapes(in, &o->fwd);
    if ((rc = forward_inputs_run("heatmap", &o->fwd, in, &f, NULL))) return rc;
    s->weights = s->all_weights + o->batch_index * item;
    uint8_t *m = s->masked;
    for (uint32_t h = 0; h < s->H; h++)
        for (uint32_t i = 0; i < s->L; i++)
            for (uint32_t j = 0; j < s->S; j++) *m++ = (uint8_t)forward_inputs_masked(in, o->batch_index, h, i, j);
    snprintf(s->what, sizeof s->what, "%s", o->fwd.cpu ? "CPU reference forward" : "unfused forward");
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Token labels                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/* A token file's lines, with room for two more labels (the keys add_bias_kv and add_zero_attn add). */
typedef struct token_list {
    char *text;
    char **items;
    uint32_t count;
} token_list;

static void tokens_free(token_list *t)
{
    free(t->text), free(t->items);
    memset(t, 0, sizeof *t);
}

/* One token per line; "\r\n" line ends are accepted, and a last line without '\n' counts. */
static int read_tokens(const char *path, token_list *t)
{
    size_t size = 0;
    char err[300];
    if (!(t->text = cli_read_file(path, TOKEN_FILE_MAX, &size, err, sizeof err))) {
        fprintf(stderr, "vkattn heatmap: the token file %s: %s\n", path, err);
        return 1;
    }
    size_t lines = 0;
    for (size_t i = 0; i < size; i++) lines += t->text[i] == '\n';
    if (size && t->text[size - 1] != '\n') lines++;
    if (lines > UINT32_MAX - 2 || !(t->items = malloc((lines + 2) * sizeof *t->items)))
        return cli_fail("heatmap", "reading the tokens", VKATTN_ERROR_OUT_OF_HOST_MEMORY, path);
    char *line = t->text;
    for (size_t i = 0; i < lines; i++) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[len - 1] = '\0';
        t->items[t->count++] = line;
        line = end ? end + 1 : line + len;
    }
    return 0;
}

static int load_labels(const heatmap_options *o, const heatmap_source *s, token_list *q, token_list *k)
{
    const char *qpath = o->tokens ? o->tokens : o->query_tokens, *kpath = o->tokens ? o->tokens : o->key_tokens;
    if (o->tokens && s->L != s->plain_keys) {
        fprintf(stderr, "vkattn heatmap: --tokens labels both axes, but L = %u and S = %u differ; "
                        "use --query-tokens and --key-tokens\n", s->L, s->plain_keys);
        return 2;
    }
    int rc;
    if (qpath) {
        if ((rc = read_tokens(qpath, q))) return rc;
        if (q->count != s->L) {
            fprintf(stderr, "vkattn heatmap: %s has %u tokens, but there are L = %u queries\n", qpath, q->count, s->L);
            return 1;
        }
    }
    if (!kpath) return 0;
    if ((rc = read_tokens(kpath, k))) return rc;
    if (k->count == s->plain_keys && s->S > s->plain_keys) {
        /* The keys PyTorch appends: bias_k first, then the zero key. */
        if (s->in.layer.add_bias_kv) k->items[k->count++] = "<bias_k>";
        if (k->count < s->S) k->items[k->count++] = "<zero>";
    }
    if (k->count != s->S) {
        fprintf(stderr, "vkattn heatmap: %s has %u tokens, but there are S = %u keys", kpath, k->count, s->plain_keys);
        if (s->S > s->plain_keys) fprintf(stderr, " (or give all S' = %u, the appended ones included)", s->S);
        fprintf(stderr, "\n");
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */

static int draw(const heatmap_options *o, const heatmap_source *s, const token_list *q, const token_list *k)
{
    char title[400];
    snprintf(title, sizeof title, "attention weights, batch item %u of %u: %u head%s, %u quer%s x %u key%s (%s)",
             o->batch_index, s->B, s->H, s->H == 1 ? "" : "s", s->L, s->L == 1 ? "y" : "ies", s->S,
             s->S == 1 ? "" : "s", s->what);
    heatmap_desc d = {
        .heads = s->H, .query_len = s->L, .key_len = s->S,
        .weights = s->weights, .masked = s->masked,
        .query_labels = q->items ? (const char *const *)q->items : NULL,
        .key_labels = k->items ? (const char *const *)k->items : NULL,
        .heads_per_row = o->heads_per_row, .cell = o->cell, .scale_one = o->scale_one,
        .title = title,
    };
    heatmap_layout l;
    vkattn_error error = {0};
    vkattn_status status = heatmap_write_png(&d, o->out, &l, &error);
    if (status != VKATTN_OK) return cli_fail("heatmap", "drawing the heatmap", status, error.message);
    printf("wrote %s (%u x %u pixels: %u panel%s of %u x %u cells", o->out, l.width, l.height, s->H,
           s->H == 1 ? "" : "s", l.rows, l.cols);
    if (l.row_bin > 1 || l.col_bin > 1) printf(", each averaging %u x %u positions", l.row_bin, l.col_bin);
    printf(")\n");
    return 0;
}

int cmd_heatmap(int argc, char **argv)
{
    heatmap_options o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    if ((rc = cli_check_output("heatmap", "--out", o.out))) return rc; /* before the forward, not after */
    heatmap_source s = {0};
    token_list q = {0}, k = {0};
    rc = o.from_npy ? source_from_npy(&o, &s) : source_from_forward(&o, &s);
    if (!rc) rc = load_labels(&o, &s, &q, &k);
    if (!rc && !o.from_npy) rc = forward_run(&o, &s);
    if (!rc) rc = draw(&o, &s, &q, &k);
    tokens_free(&q), tokens_free(&k);
    source_free(&s);
    return rc;
}
