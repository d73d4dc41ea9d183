/* Names of the roles (roles.h). */
#include "problem/roles.h"

const char *vka_role_name(vka_role role)
{
    static const char *const names[VKA_ROLE_COUNT] = {
        [VKA_ROLE_NONE] = "none",
        [VKA_ROLE_QUERY] = "query",
        [VKA_ROLE_KEY] = "key",
        [VKA_ROLE_VALUE] = "value",
        [VKA_ROLE_KEY_PADDING_MASK] = "key_padding_mask",
        [VKA_ROLE_VALID_LENS] = "valid_lens",
        [VKA_ROLE_ATTN_MASK] = "attn_mask",
        [VKA_ROLE_OUTPUT] = "output",
        [VKA_ROLE_WEIGHTS] = "weights",
        [VKA_ROLE_LSE] = "lse",
        [VKA_ROLE_CACHE_K] = "cache_k",
        [VKA_ROLE_CACHE_V] = "cache_v",
        [VKA_ROLE_CACHE_META] = "cache_meta",
        [VKA_ROLE_W_IN] = "w_in",
        [VKA_ROLE_W_K] = "w_k",
        [VKA_ROLE_W_V] = "w_v",
        [VKA_ROLE_B_IN] = "b_in",
        [VKA_ROLE_W_OUT] = "w_out",
        [VKA_ROLE_B_OUT] = "b_out",
        [VKA_ROLE_EXTRA_K] = "extra_k",
        [VKA_ROLE_EXTRA_V] = "extra_v",
        [VKA_ROLE_ROPE_FREQ] = "rope_freq",
        [VKA_ROLE_HEAD_TERMS] = "head_terms",
        [VKA_ROLE_QK_NORM] = "qk_norm",
        [VKA_ROLE_QKV] = "qkv",
        [VKA_ROLE_K_PROJ] = "k_proj",
        [VKA_ROLE_V_PROJ] = "v_proj",
        [VKA_ROLE_SCORES] = "scores",
        [VKA_ROLE_CTX] = "ctx",
        [VKA_ROLE_CTX_ACC] = "ctx_acc",
        [VKA_ROLE_SOFTMAX_STATS] = "softmax_stats",
        [VKA_ROLE_STATE_O] = "state_o",
        [VKA_ROLE_STATE_LSE] = "state_lse",
        [VKA_ROLE_ROPE_TABLE] = "rope_table",
    };
    return (unsigned)role < VKA_ROLE_COUNT ? names[role] : "unknown";
}

const char *vka_role_what(vka_role role)
{
    switch (role) {
    case VKA_ROLE_W_IN: return "in_proj_weight (or q_proj_weight)";
    case VKA_ROLE_W_K: return "k_proj_weight";
    case VKA_ROLE_W_V: return "v_proj_weight";
    case VKA_ROLE_W_OUT: return "out_proj.weight";
    case VKA_ROLE_WEIGHTS: return "the attention weights";
    case VKA_ROLE_LSE: return "the log-sum-exp";
    case VKA_ROLE_QKV: return "the projected query (workspace)";
    case VKA_ROLE_K_PROJ: return "the projected key (workspace)";
    case VKA_ROLE_V_PROJ: return "the projected value (workspace)";
    case VKA_ROLE_SCORES: return "the score buffer (workspace)";
    case VKA_ROLE_CTX: return "the attention output before out_proj (workspace)";
    default: return vka_role_name(role);
    }
}
