/*
 * llama_decode — a whole Llama-architecture decoder from a Hugging Face checkpoint, decoding
 * greedily: attention through vkattn's paged KV cache (a cache per layer), everything else on the
 * host in plain C. Token ids in, token ids out; no tokenizer.
 *
 *   llama_decode --model DIR [--steps N] [--kv-cache-dtype f32|f16|q8_0|q4_0] [--logits F.npy]
 *                [--ignore-eos] [--device N|NAME] (TOKEN ... | --prompt-file F)
 *
 * DIR holds config.json and model.safetensors, or the shards model.safetensors.index.json names
 * (F32, F16 or BF16). The prompt goes through every layer as one prefill (one cached forward per layer
 * for all its tokens), then each step feeds the token just chosen. stdout gets the generated ids,
 * stderr the timings. What it computes is Hugging Face's LlamaForCausalLM (modeling_llama.py):
 *
 *   x = embed_tokens[ids]
 *   each layer:  x += attention(rms_norm(x, input_layernorm))
 *                x += down_proj(silu(gate_proj(h)) * up_proj(h)),  h = rms_norm(x, post_attention_layernorm)
 *   logits = rms_norm(x, norm) lm_head^T          (lm_head = embed_tokens with tie_word_embeddings)
 *   rms_norm(x, w) = x / sqrt(mean(x^2) + rms_norm_eps) * w,  silu(g) = g / (1 + exp(-g))
 *
 * vkattn reads each layer's attention settings from config.json (vkattn_model_config_layer) and its
 * weights from the checkpoint (vkattn_weight_file_open); it has no API for the rest, so this file
 * reads those fields and tensors itself (cJSON parses the JSON). Only vkattn.h is used.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "vkattn.h"

enum { BLOCK_SIZE = 16, MAX_EOS = 16 };

static int fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("llama_decode: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    return 1;
}

static double now_ms(void)
{
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- config.json: what vkattn's model config does not give ------------------------------------ */

typedef struct llama_config {
    uint32_t layers, hidden, intermediate, vocab;
    double rms_norm_eps;
    int tied;                      /* tie_word_embeddings */
    uint32_t eos[MAX_EOS], eos_count;
} llama_config;

static char *read_file(const char *path, long limit, long *size)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*size = ftell(f)) >= 0 && *size <= limit && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)*size + 1)) && fread(text, 1, (size_t)*size, f) == (size_t)*size)
        text[*size] = 0;
    else
        free(text), text = NULL;
    if (f) fclose(f);
    return text;
}

static int json_count(const cJSON *root, const char *key, uint32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 || v->valuedouble != (uint32_t)v->valuedouble)
        return fail("config.json: \"%s\" is missing or not a positive integer", key);
    *out = (uint32_t)v->valuedouble;
    return 0;
}

/* eos_token_id: one id, or a list of them (Llama 3.1); `file` names it in messages. */
static int eos_read(const cJSON *eos, const char *file, llama_config *c)
{
    const cJSON *e;
    c->eos_count = 0;
    if (!eos || cJSON_IsNull(eos)) return 0;
    int listed = cJSON_IsArray(eos), n = listed ? cJSON_GetArraySize(eos) : 1;
    if (n > MAX_EOS) return fail("%s: %d eos_token_ids, more than the %d this program keeps", file, n, MAX_EOS);
    for (int i = 0; i < n; i++) {
        e = listed ? cJSON_GetArrayItem(eos, i) : eos;
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= c->vocab ||
            e->valuedouble != (uint32_t)e->valuedouble)
            return fail("%s: eos_token_id must be token ids below vocab_size %u", file, c->vocab);
        c->eos[c->eos_count++] = (uint32_t)e->valuedouble;
    }
    return 0;
}

/* generate() stops at generation_config.json's eos_token_id when the model has that file (as
 * from_pretrained loads it, none if it names none), else at config.json's. 1 if it exists. */
static int generation_eos(const char *config_path, llama_config *c, int *status)
{
    char path[4200];
    const char *slash = strrchr(config_path, '/');
    snprintf(path, sizeof path, "%.*sgeneration_config.json", slash ? (int)(slash - config_path + 1) : 0, config_path);
    long size;
    char *text = read_file(path, 16 << 20, &size);
    if (!text) return 0;
    cJSON *root = cJSON_ParseWithLength(text, (size_t)size);
    free(text);
    *status = root ? eos_read(cJSON_GetObjectItemCaseSensitive(root, "eos_token_id"), path, c) : fail("%s: not JSON", path);
    cJSON_Delete(root);
    return 1;
}

/* The families whose decoder block outside attention is Llama's (HF: LlamaDecoderLayer, Qwen2's,
 * Qwen3's, Mistral's: the same norms, MLP and head); vkattn computes each one's attention. */
static int config_read(const char *path, const vkattn_model_config *attention, llama_config *c)
{
    static const char *const families[] = {"llama", "mistral", "qwen2", "qwen3"};
    vkattn_model_info info;
    vkattn_model_config_get_info(attention, &info);
    int known = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) known |= !strcmp(info.model_type, families[i]);
    if (!known)
        return fail("%s: model_type \"%s\" is not a Llama-style decoder (llama, mistral, qwen2, qwen3)", path,
                    info.model_type);

    long size;
    char *text = read_file(path, 16 << 20, &size);
    if (!text) return fail("%s: cannot read it", path);
    cJSON *root = cJSON_ParseWithLength(text, (size_t)size);
    free(text);
    if (!root) return fail("%s: not JSON", path);
    int status = json_count(root, "num_hidden_layers", &c->layers) || json_count(root, "hidden_size", &c->hidden) ||
                 json_count(root, "intermediate_size", &c->intermediate) || json_count(root, "vocab_size", &c->vocab);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "rms_norm_eps");
    c->rms_norm_eps = cJSON_IsNumber(eps) ? eps->valuedouble : 1e-6; /* LlamaConfig's default */
    c->tied = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings"));
    if (!status && !generation_eos(path, c, &status))
        status = eos_read(cJSON_GetObjectItemCaseSensitive(root, "eos_token_id"), path, c);
    if (!status && act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
        status = fail("%s: hidden_act must be \"silu\" (SwiGLU)", path);
    if (!status && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "mlp_bias")))
        status = fail("%s: mlp_bias is not supported", path);
    if (!status && c->layers != info.num_layers)
        status = fail("%s: num_hidden_layers %u, vkattn reads %u", path, c->layers, info.num_layers);
    cJSON_Delete(root);
    return status;
}

/* ---- model.safetensors: the tensors outside attention ------------------------------------------ */

/* An 8-byte little-endian header length, a JSON header ({"name": {"dtype", "shape",
 * "data_offsets": [begin, end]}}, offsets into the data after it), the data. */
typedef struct safetensors {
    FILE *file;
    cJSON *header;
    long data_at, data_bytes;
} safetensors;

static int st_open(const char *path, safetensors *st)
{
    unsigned char n[8];
    uint64_t header_bytes = 0;
    long size = 0;
    char *header = NULL;
    st->header = NULL;
    st->file = fopen(path, "rb");
    if (!st->file || fseek(st->file, 0, SEEK_END) != 0 || (size = ftell(st->file)) < 8 ||
        fseek(st->file, 0, SEEK_SET) != 0 || fread(n, 1, 8, st->file) != 8)
        return fail("%s: cannot read a safetensors header", path);
    for (int i = 7; i >= 0; i--) header_bytes = header_bytes << 8 | n[i];
    if (header_bytes > 100000000 || header_bytes > (uint64_t)size - 8 || !(header = malloc(header_bytes)) ||
        fread(header, 1, header_bytes, st->file) != header_bytes)
        header_bytes = 0;
    st->header = header_bytes ? cJSON_ParseWithLength(header, header_bytes) : NULL;
    free(header);
    if (!st->header) return fail("%s: the safetensors header is not valid JSON within the file", path);
    st->data_at = 8 + (long)header_bytes;
    st->data_bytes = size - st->data_at;
    return 0;
}

static void st_close(safetensors *st)
{
    if (st->file) fclose(st->file);
    cJSON_Delete(st->header);
}

/* The checkpoint: one safetensors file, or the shards its model.safetensors.index.json names
 * ({"weight_map": {"<tensor>": "<shard file>", ...}}, shards beside the index), each opened when
 * a tensor is first read from it. */
typedef struct checkpoint {
    cJSON *weight_map;       /* NULL for one file */
    char folder[4096];       /* the index's, "" for the current one */
    safetensors *files;      /* one, or one per shard name, in shard_names' order */
    const cJSON **shard_names;
    int count;
} checkpoint;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int checkpoint_open(const char *path, checkpoint *ck)
{
    memset(ck, 0, sizeof *ck);
    if (!ends_with(path, ".json")) {
        ck->files = calloc(1, sizeof *ck->files);
        ck->count = 1;
        return !ck->files ? fail("out of memory") : st_open(path, &ck->files[0]);
    }
    long size;
    char *text = read_file(path, 100000000, &size);
    cJSON *index = text ? cJSON_ParseWithLength(text, (size_t)size) : NULL;
    free(text);
    cJSON *map = cJSON_DetachItemFromObjectCaseSensitive(index, "weight_map");
    cJSON_Delete(index);
    if (!cJSON_IsObject(map) || !map->child)
        return cJSON_Delete(map), fail("%s: not an index with a \"weight_map\" of tensors", path);
    ck->weight_map = map;
    const char *slash = strrchr(path, '/');
    snprintf(ck->folder, sizeof ck->folder, "%.*s", slash ? (int)(slash - path + 1) : 0, path);
    int entries = cJSON_GetArraySize(map);
    ck->files = calloc((size_t)entries, sizeof *ck->files);
    ck->shard_names = calloc((size_t)entries, sizeof *ck->shard_names);
    return !ck->files || !ck->shard_names ? fail("out of memory") : 0;
}

/* The file that holds tensor `name`, opened if it was not (NULL after a message). */
static safetensors *checkpoint_file(checkpoint *ck, const char *name)
{
    if (!ck->weight_map) return &ck->files[0];
    const cJSON *shard = cJSON_GetObjectItemCaseSensitive(ck->weight_map, name);
    if (!cJSON_IsString(shard)) return fail("%s is not in the index's weight_map", name), NULL;
    int i = 0;
    while (i < ck->count && strcmp(ck->shard_names[i]->valuestring, shard->valuestring)) i++;
    if (i < ck->count) return &ck->files[i];
    char path[8192];
    snprintf(path, sizeof path, "%s%s", ck->folder, shard->valuestring);
    ck->shard_names[ck->count] = shard;
    return st_open(path, &ck->files[ck->count++]) ? NULL : &ck->files[i];
}

static void checkpoint_close(checkpoint *ck)
{
    for (int i = 0; ck->files && i < ck->count; i++) st_close(&ck->files[i]);
    free(ck->files), free(ck->shard_names);
    cJSON_Delete(ck->weight_map);
}

static float bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* 1 if a header's "shape" is (rows, cols), or (cols) when rows is 0. */
static int shape_is(const cJSON *shape, uint32_t rows, uint32_t cols)
{
    int rank = rows ? 2 : 1;
    return cJSON_GetArraySize(shape) == rank && cJSON_GetArrayItem(shape, rank - 1)->valuedouble == cols &&
           (!rows || cJSON_GetArrayItem(shape, 0)->valuedouble == rows);
}

/* Tensor `name` of shape (rows, cols), or (cols) when rows is 0, as a new float array (NULL after
 * a message). The host is little-endian, as the file. */
static float *st_load(checkpoint *ck, const char *name, uint32_t rows, uint32_t cols)
{
    safetensors *st = checkpoint_file(ck, name);
    if (!st) return NULL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(st->header, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    const char *type = cJSON_IsString(dtype) ? dtype->valuestring : "";
    size_t size = !strcmp(type, "F32") ? 4 : !strcmp(type, "F16") || !strcmp(type, "BF16") ? 2 : 0;
    size_t count = (size_t)(rows ? rows : 1) * cols, bytes = count * size;
    double begin = cJSON_GetArraySize(offsets) == 2 ? cJSON_GetArrayItem(offsets, 0)->valuedouble : -1;
    double end = cJSON_GetArraySize(offsets) == 2 ? cJSON_GetArrayItem(offsets, 1)->valuedouble : -1;
    const char *problem = !t     ? "is not in the checkpoint"
                          : !size ? "is not F32, F16 or BF16"
                          : !shape_is(cJSON_GetObjectItemCaseSensitive(t, "shape"), rows, cols)
                              ? "has another shape than config.json gives"
                          : begin < 0 || end - begin != (double)bytes || end > (double)st->data_bytes
                              ? "has data_offsets that do not hold its data in the file"
                              : NULL;
    if (problem) {
        fail("%s %s (expected %u x %u)", name, problem, rows, cols);
        return NULL;
    }
    float *out = malloc(count * sizeof(float));
    uint16_t *raw = size == 2 ? malloc(bytes) : NULL; /* 16-bit values, converted below */
    if (!out || (size == 2 && !raw) || fseek(st->file, st->data_at + (long)begin, SEEK_SET) != 0 ||
        fread(size == 4 ? (void *)out : (void *)raw, 1, bytes, st->file) != bytes) {
        fail("%s: cannot read its data", name);
        free(out), free(raw);
        return NULL;
    }
    if (!strcmp(type, "F16")) /* IEEE halves: the library's conversion, exact */
        vkattn_dtype_to_f32(VKATTN_DTYPE_F16, raw, count, out);
    for (size_t i = 0; !strcmp(type, "BF16") && i < count; i++) out[i] = bf16_to_float(raw[i]);
    free(raw);
    return out;
}

/* ---- the model ------------------------------------------------------------------------------------ */

typedef struct block {
    vkattn_layer *attention;
    vkattn_kv_cache *cache;         /* this layer's keys and values */
    float *input_norm, *post_norm;  /* (E) */
    float *gate, *up;               /* (I, E) */
    float *down;                    /* (E, I) */
} block;

typedef struct model {
    llama_config config;
    vkattn_context *ctx;
    block *blocks;
    float *embed;                   /* (V, E) */
    float *norm;                    /* (E) */
    float *lm_head;                 /* (V, E): embed when tied */
    double attention_ms;            /* spent in attend() */
} model;

typedef struct options {
    const char *config, *weights, *device, *logits;
    char model_config[4096], model_weights[4096]; /* --model DIR's files */
    uint32_t steps;
    vkattn_dtype kv_dtype;
    int ignore_eos;
} options;

/* Layer i: its attention (description from config.json, weights under the prefix vkattn names),
 * a KV cache for `max_tokens`, and its norms and MLP. */
static int block_load(model *m, const vkattn_model_config *attention, checkpoint *st, const options *o, uint32_t i,
                      uint32_t max_tokens)
{
    block *b = &m->blocks[i];
    uint32_t E = m->config.hidden, I = m->config.intermediate;
    vkattn_error error = {0};
    vkattn_layer_desc desc;
    vkattn_kv_cache_desc cache = {.num_blocks = (max_tokens + BLOCK_SIZE - 1) / BLOCK_SIZE, .block_size = BLOCK_SIZE,
                                  .max_sequences = 1, .dtype = o->kv_dtype};
    char prefix[64], name[128];
    vkattn_weight_file *file = NULL;
    if (vkattn_model_config_layer(attention, i, &desc, &cache, prefix, sizeof prefix, &error) != VKATTN_OK ||
        vkattn_weight_file_open(o->weights, prefix, &file, &error) != VKATTN_OK ||
        vkattn_weight_file_check(file, &desc, &error) != VKATTN_OK) /* a config of another model */
        return vkattn_weight_file_destroy(file), fail("%s", error.message);
    vkattn_status status = vkattn_layer_create(m->ctx, &desc, vkattn_weight_file_weights(file), &b->attention);
    vkattn_weight_file_destroy(file);
    if (status == VKATTN_OK) status = vkattn_kv_cache_create(m->ctx, &cache, &b->cache);
    if (status != VKATTN_OK) return fail("layer %u: %s", i, vkattn_context_last_error(m->ctx));
#define LOAD(field, leaf, rows, cols) \
    (snprintf(name, sizeof name, "model.layers.%u." leaf, i), (b->field = st_load(st, name, rows, cols)) != NULL)
    return !(LOAD(input_norm, "input_layernorm.weight", 0, E) && LOAD(post_norm, "post_attention_layernorm.weight", 0, E) &&
             LOAD(gate, "mlp.gate_proj.weight", I, E) && LOAD(up, "mlp.up_proj.weight", I, E) &&
             LOAD(down, "mlp.down_proj.weight", E, I));
#undef LOAD
}

static int model_load(model *m, const options *o, uint32_t max_tokens)
{
    vkattn_error error = {0};
    vkattn_model_config *attention = NULL;
    checkpoint st = {0};
    if (vkattn_model_config_open(o->config, &attention, &error) != VKATTN_OK) return fail("%s", error.message);
    int status = config_read(o->config, attention, &m->config) || checkpoint_open(o->weights, &st);
    vkattn_context_desc cdesc = {.device = o->device};
    if (!status && vkattn_context_create(&cdesc, &m->ctx, &error) != VKATTN_OK) status = fail("%s", error.message);
    uint32_t E = m->config.hidden, V = m->config.vocab;
    if (!status && !(m->blocks = calloc(m->config.layers, sizeof *m->blocks))) status = fail("out of memory");
    for (uint32_t i = 0; !status && i < m->config.layers; i++) status = block_load(m, attention, &st, o, i, max_tokens);
    if (!status && (!(m->embed = st_load(&st, "model.embed_tokens.weight", V, E)) ||
                    !(m->norm = st_load(&st, "model.norm.weight", 0, E))))
        status = 1;
    if (!status) m->lm_head = m->config.tied ? m->embed : st_load(&st, "lm_head.weight", V, E);
    if (!status && !m->lm_head) status = 1;
    checkpoint_close(&st);
    vkattn_model_config_destroy(attention);
    return status;
}

static void model_destroy(model *m)
{
    vkattn_context_destroy(m->ctx); /* and the layers and caches made from it */
    for (uint32_t i = 0; m->blocks && i < m->config.layers; i++) {
        block *b = &m->blocks[i];
        free(b->input_norm), free(b->post_norm), free(b->gate), free(b->up), free(b->down);
    }
    if (m->lm_head != m->embed) free(m->lm_head);
    free(m->blocks), free(m->embed), free(m->norm);
}

/* ---- the forward ------------------------------------------------------------------------------- */

/* The one place attention runs: layer b's attention for `tokens` new tokens of sequence 0, x and y
 * (tokens, E) on the host. vkattn_forward_cached rotates them at their positions (the tokens the
 * cache holds, onward), appends their keys and values and attends causally over all of them. A
 * device-tensor or recorded variant of the call would change only this function. */
static int attend(model *m, block *b, uint32_t tokens, const float *x, float *y)
{
    double start = now_ms();
    vkattn_cached_forward_desc f = {.batch = 1, .new_tokens = &tokens, .query = x, .output = y};
    if (vkattn_forward_cached(b->attention, b->cache, &f) != VKATTN_OK)
        return fail("attention: %s", vkattn_context_last_error(m->ctx));
    m->attention_ms += now_ms() - start;
    return 0;
}

static void rms_norm(float *out, const float *x, const float *w, uint32_t n, double eps)
{
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(sum / n + eps));
    for (uint32_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* y (rows) = W (rows, cols) x (cols), as nn.Linear without a bias. */
static void linear(float *y, const float *w, const float *x, uint32_t rows, uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++) {
        float sum = 0;
        for (uint32_t c = 0; c < cols; c++) sum += w[(size_t)r * cols + c] * x[c];
        y[r] = sum;
    }
}

/* Runs `count` new tokens through the model, after those its caches hold; writes the logits of the
 * last one (V). */
static int forward(model *m, const uint32_t *ids, uint32_t count, float *logits)
{
    const llama_config *c = &m->config;
    uint32_t E = c->hidden, I = c->intermediate;
    float *x = malloc(sizeof(float) * count * E), *h = malloc(sizeof(float) * count * E);
    float *a = malloc(sizeof(float) * count * E), *gate = malloc(sizeof(float) * I), *up = malloc(sizeof(float) * I);
    int status = x && h && a && gate && up ? 0 : fail("out of memory");
    for (uint32_t t = 0; !status && t < count; t++)
        memcpy(x + (size_t)t * E, m->embed + (size_t)ids[t] * E, sizeof(float) * E);
    for (uint32_t l = 0; !status && l < c->layers; l++) {
        block *b = &m->blocks[l];
        for (uint32_t t = 0; t < count; t++)
            rms_norm(h + (size_t)t * E, x + (size_t)t * E, b->input_norm, E, c->rms_norm_eps);
        if ((status = attend(m, b, count, h, a))) break;
        for (size_t i = 0; i < (size_t)count * E; i++) x[i] += a[i];
        for (uint32_t t = 0; t < count; t++) {
            float *xt = x + (size_t)t * E, *ht = h + (size_t)t * E, *at = a + (size_t)t * E;
            rms_norm(ht, xt, b->post_norm, E, c->rms_norm_eps);
            linear(gate, b->gate, ht, I, E);
            linear(up, b->up, ht, I, E);
            for (uint32_t j = 0; j < I; j++) gate[j] = gate[j] / (1.0f + expf(-gate[j])) * up[j];
            linear(at, b->down, gate, E, I);
            for (uint32_t i = 0; i < E; i++) xt[i] += at[i];
        }
    }
    if (!status) {
        rms_norm(h, x + (size_t)(count - 1) * E, m->norm, E, c->rms_norm_eps);
        linear(logits, m->lm_head, h, c->vocab, E);
    }
    free(x), free(h), free(a), free(gate), free(up);
    return status;
}

/* ---- the program --------------------------------------------------------------------------------- */

static int usage(void)
{
    fputs("usage: llama_decode --model DIR | --config config.json --weights model.safetensors|model.safetensors.index.json\n"
          "                    [--steps N] [--kv-cache-dtype f32|f16|q8_0|q4_0] [--logits F.npy] [--ignore-eos]\n"
          "                    [--device N|NAME] (TOKEN ... | --prompt-file F)\n",
          stderr);
    return 2;
}

/* Appends the whitespace-separated ids of `text` to prompt; -1 on anything but ids. */
static int parse_ids(const char *text, uint32_t **prompt, uint32_t *count)
{
    for (;;) {
        char *end;
        while (*text == ' ' || *text == '\n' || *text == '\t' || *text == '\r' || *text == ',') text++;
        if (!*text) return 0;
        unsigned long id = strtoul(text, &end, 10);
        if (end == text || id > UINT32_MAX || (*end && !strchr(" \n\t\r,", *end))) return -1;
        uint32_t *grown = realloc(*prompt, sizeof **prompt * (*count + 1));
        if (!grown) return -1;
        (*prompt = grown)[(*count)++] = (uint32_t)id;
        text = end;
    }
}

static int parse_args(int argc, char **argv, options *o, uint32_t **prompt, uint32_t *count)
{
    static const char *const dtypes[] = {"f32", "f16", "q8_0", "q4_0"};
    static const vkattn_dtype dtype_values[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        int takes_value = strncmp(arg, "--", 2) == 0 && strcmp(arg, "--ignore-eos") != 0;
        if (!strcmp(arg, "--help")) return usage();
        if (takes_value && !value) return fail("%s needs a value", arg);
        if (!strcmp(arg, "--model")) {
            snprintf(o->model_config, sizeof o->model_config, "%s/config.json", value);
            /* model.safetensors, else the index of its shards */
            snprintf(o->model_weights, sizeof o->model_weights, "%s/model.safetensors", value);
            FILE *one = fopen(o->model_weights, "rb");
            if (one) fclose(one);
            else snprintf(o->model_weights, sizeof o->model_weights, "%s/model.safetensors.index.json", value);
            o->config = o->model_config, o->weights = o->model_weights;
        } else if (!strcmp(arg, "--config")) o->config = value;
        else if (!strcmp(arg, "--weights")) o->weights = value;
        else if (!strcmp(arg, "--device")) o->device = value;
        else if (!strcmp(arg, "--logits")) o->logits = value;
        else if (!strcmp(arg, "--ignore-eos")) o->ignore_eos = 1;
        else if (!strcmp(arg, "--steps")) {
            char *end;
            unsigned long n = strtoul(value, &end, 10);
            if (*end || n < 1 || n > 1000000) return fail("--steps takes a count from 1 to 1000000");
            o->steps = (uint32_t)n;
        } else if (!strcmp(arg, "--kv-cache-dtype")) {
            size_t d = 0;
            while (d < 4 && strcmp(value, dtypes[d])) d++;
            if (d == 4) return fail("--kv-cache-dtype takes f32, f16, q8_0 or q4_0");
            o->kv_dtype = dtype_values[d];
        } else if (!strcmp(arg, "--prompt-file")) {
            long size;
            char *text = read_file(value, 64 << 20, &size);
            if (!text || parse_ids(text, prompt, count)) return free(text), fail("%s: not a list of token ids", value);
            free(text);
        } else if (takes_value) return usage();
        else if (parse_ids(arg, prompt, count)) return fail("%s is not a token id", arg);
        i += takes_value;
    }
    if (!o->config || !o->weights || !*count) return usage();
    return 0;
}

static uint32_t argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

typedef struct timings {
    uint32_t pipelines;
    double warm_up_ms, prefill_ms, prefill_attention_ms, decode_ms, decode_attention_ms;
} timings;

/* Warm-up, the prompt's prefill, then greedy steps until o->steps tokens or an end-of-sequence
 * token: out gets the ids (*generated of them), logits each step's row (o->logits) or the last. */
static int decode(model *m, const options *o, const uint32_t *prompt, uint32_t count, uint32_t *out,
                  uint32_t *generated, float *logits, timings *spent)
{
    uint32_t V = m->config.vocab, n = 0;
    double start = now_ms();
    /* every pipeline the prompt and the steps will use, built before the first token */
    vkattn_warm_up_desc warm = {.max_batch = 1, .max_new_tokens = count, .max_length = count + o->steps};
    for (uint32_t l = 0; l < m->config.layers; l++) {
        uint32_t built = 0;
        warm.cache = m->blocks[l].cache;
        if (vkattn_layer_warm_up(m->blocks[l].attention, &warm, &built) != VKATTN_OK)
            return fail("warm-up: %s", vkattn_context_last_error(m->ctx));
        spent->pipelines += built;
    }
    spent->warm_up_ms = now_ms() - start;

    start = now_ms();
    if (forward(m, prompt, count, logits)) return 1;
    spent->prefill_ms = now_ms() - start, spent->prefill_attention_ms = m->attention_ms, m->attention_ms = 0;
    for (;;) {
        float *row = logits + (o->logits ? (size_t)n * V : 0);
        uint32_t token = argmax(row, V);
        int eos = 0;
        for (uint32_t e = 0; e < m->config.eos_count; e++) eos |= !o->ignore_eos && token == m->config.eos[e];
        out[n++] = token;
        *generated = n;
        if (eos || n == o->steps) break;
        start = now_ms();
        if (forward(m, &token, 1, o->logits ? row + V : row)) return 1;
        spent->decode_ms += now_ms() - start;
    }
    spent->decode_attention_ms = m->attention_ms;
    return 0;
}

int main(int argc, char **argv)
{
    options o = {.steps = 32};
    uint32_t *prompt = NULL, count = 0, *out = NULL, generated = 0;
    model m = {0};
    float *logits = NULL;
    timings spent = {0};
    int status = parse_args(argc, argv, &o, &prompt, &count);
    if (!status) status = model_load(&m, &o, count + o.steps);
    for (uint32_t t = 0; t < count && !status; t++)
        if (prompt[t] >= m.config.vocab) status = fail("token %u is not below vocab_size %u", prompt[t], m.config.vocab);
    size_t rows = o.logits ? o.steps : 1;
    if (!status && (!(out = malloc(sizeof *out * o.steps)) || !(logits = malloc(sizeof *logits * m.config.vocab * rows))))
        status = fail("out of memory");
    if (!status) status = decode(&m, &o, prompt, count, out, &generated, logits, &spent);

    if (!status) {
        for (uint32_t i = 0; i < generated; i++) printf("%s%u", i ? " " : "", out[i]);
        printf("\n");
        vkattn_error error = {0};
        vkattn_array array = {.dtype = VKATTN_DTYPE_F32, .rank = 2, .dims = {generated, m.config.vocab}, .data = logits,
                              .bytes = sizeof(float) * generated * m.config.vocab};
        if (o.logits && vkattn_npy_write(o.logits, &array, &error) != VKATTN_OK) status = fail("%s", error.message);
        vkattn_device_info device;
        vkattn_context_device(m.ctx, &device);
        fprintf(stderr, "llama_decode: %u layers on %s; warm-up %.0f ms (%u pipelines built)\n", m.config.layers,
                device.name, spent.warm_up_ms, spent.pipelines);
        fprintf(stderr, "prefill: %u tokens in %.1f ms (attention %.1f ms)\n", count, spent.prefill_ms,
                spent.prefill_attention_ms);
        if (generated > 1)
            fprintf(stderr, "decode: %u steps in %.1f ms, %.1f steps/s (attention %.1f ms)\n", generated - 1,
                    spent.decode_ms, (generated - 1) / (spent.decode_ms / 1e3), spent.decode_attention_ms);
    }
    /* a validation message is a bug, in vkattn or here (VKATTN_VALIDATION=1 turns the layer on) */
    uint32_t messages = m.ctx ? vkattn_context_validation_messages(m.ctx) : 0;
    if (messages) status = fail("the Vulkan validation layer reported %u messages", messages);
    model_destroy(&m);
    free(prompt), free(out), free(logits);
    return status;
}
