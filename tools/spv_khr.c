/* SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix (spv_khr.h).
 * Written from the two SPIR-V extension specifications; one pass collects
 * the matrix types, values, variables and constants and joins their uses
 * (union-find over ids), a second writes the KHR module. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spv_khr.h"

enum {
    OP_UNDEF = 1, OP_SOURCE = 3, OP_SOURCE_EXT = 4, OP_NAME = 5, OP_MEMBER_NAME = 6,
    OP_STRING = 7, OP_LINE = 8, OP_EXTENSION = 10, OP_EXT_INST_IMPORT = 11,
    OP_MEMORY_MODEL = 14, OP_ENTRY_POINT = 15, OP_EXECUTION_MODE = 16, OP_CAPABILITY = 17,
    OP_TYPE_BOOL = 20, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23,
    OP_TYPE_MATRIX = 24, OP_TYPE_ARRAY = 28, OP_TYPE_RUNTIME_ARRAY = 29, OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32, OP_TYPE_FUNCTION = 33, OP_CONSTANT_TRUE = 41, OP_CONSTANT_FALSE = 42,
    OP_CONSTANT = 43, OP_CONSTANT_COMPOSITE = 44, OP_CONSTANT_NULL = 46,
    OP_SPEC_CONSTANT_TRUE = 48, OP_SPEC_CONSTANT_FALSE = 49, OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51, OP_SPEC_CONSTANT_OP = 52, OP_FUNCTION = 54,
    OP_FUNCTION_PARAMETER = 55, OP_FUNCTION_END = 56, OP_VARIABLE = 59, OP_LOAD = 61,
    OP_STORE = 62, OP_ACCESS_CHAIN = 65, OP_IN_BOUNDS_ACCESS_CHAIN = 66,
    OP_PTR_ACCESS_CHAIN = 67, OP_DECORATE = 71, OP_MEMBER_DECORATE = 72,
    OP_COMPOSITE_CONSTRUCT = 80, OP_COMPOSITE_EXTRACT = 81, OP_COMPOSITE_INSERT = 82,
    OP_COPY_OBJECT = 83, OP_CONVERT_F_TO_U = 109, OP_FCONVERT = 115, OP_BITCAST = 124,
    OP_SNEGATE = 126, OP_FNEGATE = 127, OP_IADD = 128, OP_FDIV = 136,
    OP_MATRIX_TIMES_SCALAR = 143, OP_SELECT = 169, OP_PHI = 245, OP_LOOP_MERGE = 246,
    OP_SELECTION_MERGE = 247, OP_LABEL = 248, OP_BRANCH = 249, OP_BRANCH_CONDITIONAL = 250,
    OP_SWITCH = 251, OP_NO_LINE = 317, OP_MODULE_PROCESSED = 330,
    OP_TYPE_CM_KHR = 4456, OP_CM_LOAD_KHR = 4457, OP_CM_STORE_KHR = 4458,
    OP_CM_MULADD_KHR = 4459, OP_CM_LENGTH_KHR = 4460,
    OP_TYPE_CM_NV = 5358, OP_CM_LOAD_NV = 5359, OP_CM_STORE_NV = 5360, OP_CM_MULADD_NV = 5361,
    OP_CM_LENGTH_NV = 5362,
};
enum { CAP_CM_NV = 5357, CAP_CM_KHR = 6022 };
enum { USE_A = 0, USE_B = 1, USE_ACC = 2, N_USES = 3 };
static const char *const use_names[N_USES] = {"MatrixA", "MatrixB", "MatrixAccumulator"};
static const char EXT_NV[] = "SPV_NV_cooperative_matrix";
static const char EXT_KHR[] = "SPV_KHR_cooperative_matrix";

/* What an id is, for the rewrite. */
enum { K_NONE, K_CM_TYPE, K_CM_PTR_TYPE, K_VALUE, K_VARIABLE, K_CONST };

typedef struct site {
    size_t pos;      /* input word holding the constant's id */
    uint32_t cid;    /* the constant */
    uint32_t node;   /* its reader's node, or 0 with use fixed */
    int use;
} site;

typedef struct rw {
    const uint32_t *w;
    size_t n;
    uint32_t bound, next_id;
    unsigned flags;
    uint8_t *kind;       /* [bound] K_* */
    uint32_t *base;      /* [bound] value/const: its NV type; variable/pointer type: the NV type */
    uint32_t *parent;    /* [bound] union-find */
    int8_t *use;         /* [bound] at a root: USE_* or -1 */
    size_t *use_at;      /* [bound] at a root: the instruction that fixed the use */
    size_t *conv_at;     /* [bound] at a root: a conversion that joined the class (0: none) */
    size_t *rt_pos;      /* [bound] nodes: the input word of their result type */
    uint32_t *repl;      /* [n] replacement word for the input word (0: keep) */
    int consts_out;      /* the Use constants are written */
    int8_t *boolv;       /* [bound] OpConstantTrue 1 / False 0 / -1 */
    uint8_t *need;       /* [bound] types, pointer types, constants: uses wanted (bit mask) */
    uint32_t (*khr)[N_USES]; /* [bound] id per use for types, pointer types, constants */
    site *sites;
    size_t n_sites, cap_sites;
    uint32_t int_type;   /* OpTypeInt 32 for the Use / layout constants */
    uint32_t use_const[N_USES];
    char *err;
    size_t cap;
} rw;

static int fail(rw *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (r->cap)
        vsnprintf(r->err, r->cap, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *op_name(uint32_t op)
{
    switch (op) {
    case OP_LOAD: return "OpLoad";
    case OP_STORE: return "OpStore";
    case OP_PHI: return "OpPhi";
    case OP_SELECT: return "OpSelect";
    case OP_COPY_OBJECT: return "OpCopyObject";
    case OP_FCONVERT: return "OpFConvert";
    case OP_VARIABLE: return "OpVariable";
    case OP_CM_MULADD_NV: return "OpCooperativeMatrixMulAddNV";
    case OP_CM_LOAD_NV: return "OpCooperativeMatrixLoadNV";
    case OP_CM_STORE_NV: return "OpCooperativeMatrixStoreNV";
    case OP_CM_LENGTH_NV: return "OpCooperativeMatrixLengthNV";
    case OP_TYPE_FUNCTION: return "OpTypeFunction";
    case OP_DECORATE: return "OpDecorate";
    case OP_COMPOSITE_INSERT: return "OpCompositeInsert";
    case OP_ACCESS_CHAIN: return "OpAccessChain";
    default: return NULL;
    }
}

static const char *opstr(uint32_t op, char *buf, size_t cap)
{
    const char *s = op_name(op);
    if (s)
        return s;
    snprintf(buf, cap, "opcode %u", op);
    return buf;
}

static uint32_t find(rw *r, uint32_t x)
{
    while (r->parent[x] != x) {
        r->parent[x] = r->parent[r->parent[x]];
        x = r->parent[x];
    }
    return x;
}

static int kind_of(const rw *r, uint32_t id)
{
    return id < r->bound ? r->kind[id] : K_NONE;
}

static int is_node(const rw *r, uint32_t id)
{
    return kind_of(r, id) == K_VALUE || kind_of(r, id) == K_VARIABLE;
}

static int is_cm(const rw *r, uint32_t id)
{
    return kind_of(r, id) != K_NONE;
}

static int set_use(rw *r, uint32_t x, int u, size_t at)
{
    uint32_t root = find(r, x);
    if (r->use[root] >= 0 && r->use[root] != u && r->conv_at[root])
        return fail(r, "instruction at word %zu: %%%u is used as %s, but the instruction at word "
                       "%zu uses it as %s, joined by the conversion at word %zu: a conversion "
                       "between uses is not allowed in SPV_KHR_cooperative_matrix",
                    at, x, use_names[u], r->use_at[root], use_names[r->use[root]],
                    r->conv_at[root]);
    if (r->use[root] >= 0 && r->use[root] != u)
        return fail(r, "instruction at word %zu: %%%u is used as %s, but the instruction at word "
                       "%zu uses it as %s (KHR types are per use)",
                    at, x, use_names[u], r->use_at[root], use_names[r->use[root]]);
    if (r->use[root] < 0) {
        r->use[root] = (int8_t)u;
        r->use_at[root] = at;
    }
    return 0;
}

static int add_site(rw *r, size_t pos, uint32_t cid, uint32_t node, int use)
{
    if (r->n_sites == r->cap_sites) {
        size_t c = r->cap_sites ? 2 * r->cap_sites : 64;
        site *s = realloc(r->sites, c * sizeof *s);
        if (!s)
            return fail(r, "out of memory");
        r->sites = s;
        r->cap_sites = c;
    }
    r->sites[r->n_sites++] = (site){pos, cid, node, use};
    return 0;
}

static int is_conversion(uint32_t op);

/* Joins node a with the operand in word pos (a node or a constant); a
 * conversion joins values of two component types (one use, two types). */
static int join(rw *r, uint32_t a, size_t pos, size_t at, uint32_t op)
{
    uint32_t b = r->w[pos];
    char buf[32];
    if (!is_cm(r, b))
        return 0;
    if (r->base[a] != r->base[b] && !is_conversion(op))
        return fail(r, "instruction at word %zu (%s): %%%u and %%%u have different matrix types",
                    at, opstr(op, buf, sizeof buf), a, b);
    if (r->kind[b] == K_CONST)
        return add_site(r, pos, b, a, -1);
    if (!is_node(r, b))
        return fail(r, "instruction at word %zu (%s): operand %%%u is a matrix type, not a value",
                    at, opstr(op, buf, sizeof buf), b);
    uint32_t ra = find(r, a), rb = find(r, b);
    if (is_conversion(op) && !r->conv_at[ra])
        r->conv_at[ra] = at;
    if (ra == rb)
        return 0;
    if (!r->conv_at[ra])
        r->conv_at[ra] = r->conv_at[rb];
    if (r->use[ra] >= 0 && r->use[rb] >= 0 && r->use[ra] != r->use[rb])
        return fail(r, "instruction at word %zu (%s): joins %%%u (%s, from word %zu) and %%%u "
                       "(%s, from word %zu); a conversion or copy between uses is not allowed "
                       "in SPV_KHR_cooperative_matrix",
                    at, opstr(op, buf, sizeof buf), a, use_names[r->use[ra]], r->use_at[ra], b,
                    use_names[r->use[rb]], r->use_at[rb]);
    if (r->use[ra] < 0) {
        r->use[ra] = r->use[rb];
        r->use_at[ra] = r->use_at[rb];
    }
    r->parent[rb] = ra;
    return 0;
}

static int new_node(rw *r, uint32_t id, int kind, uint32_t base, size_t rt_pos)
{
    if (id >= r->bound)
        return fail(r, "id %u at word %zu is over the bound %u", id, rt_pos + 1, r->bound);
    if (r->kind[id] != K_NONE)
        return fail(r, "id %u at word %zu is defined twice", id, rt_pos + 1);
    r->kind[id] = (uint8_t)kind;
    r->base[id] = base;
    r->rt_pos[id] = rt_pos + 1; /* the result-type word (nodes) */
    return 0;
}

/* Operand words [from, to) that name a matrix id: refused (the rewriter
 * does not know what the instruction does with it). */
static int refuse_names(rw *r, size_t at, uint32_t op, size_t from, size_t to)
{
    char buf[32];
    for (size_t i = from; i < to; i++)
        if (is_cm(r, r->w[i]))
            return fail(r, "instruction at word %zu (%s) names cooperative-matrix id %%%u; the "
                           "rewriter cannot classify it",
                        at, opstr(op, buf, sizeof buf), r->w[i]);
    return 0;
}

static int is_arith(uint32_t op)
{
    return (op >= OP_SNEGATE && op <= OP_FDIV) || op == OP_MATRIX_TIMES_SCALAR;
}

static int is_conversion(uint32_t op)
{
    return (op >= OP_CONVERT_F_TO_U && op <= OP_FCONVERT) || op == OP_BITCAST;
}

/* Pass 1 over one instruction at word i (wc words). */
static int collect(rw *r, size_t i, uint32_t op, uint32_t wc)
{
    const uint32_t *w = r->w + i;
    switch (op) {
    case OP_TYPE_CM_NV:
        if (wc != 6)
            return fail(r, "OpTypeCooperativeMatrixNV at word %zu has %u words (6)", i, wc);
        return new_node(r, w[1], K_CM_TYPE, w[1], i);
    case OP_TYPE_POINTER:
        if (is_cm(r, w[3]))
            return new_node(r, w[1], K_CM_PTR_TYPE, w[3], i);
        return 0;
    case OP_TYPE_ARRAY: case OP_TYPE_RUNTIME_ARRAY: case OP_TYPE_STRUCT: case OP_TYPE_VECTOR:
    case OP_TYPE_MATRIX:
        if (refuse_names(r, i, op, i + 2, i + wc))
            return fail(r, "type %%%u at word %zu is a composite of cooperative matrices, which "
                           "the rewriter does not split", w[1], i);
        return 0;
    case OP_TYPE_FUNCTION:
        if (refuse_names(r, i, op, i + 2, i + wc))
            return fail(r, "function type %%%u at word %zu takes or returns a cooperative matrix; "
                           "the rewriter does not split function types (inline the function)",
                        w[1], i);
        return 0;
    case OP_TYPE_INT:
        if (w[2] == 32 && (!r->int_type || w[3] == 0))
            r->int_type = w[1];
        return 0;
    case OP_CONSTANT_TRUE: case OP_CONSTANT_FALSE:
        if (w[2] < r->bound)
            r->boolv[w[2]] = op == OP_CONSTANT_TRUE;
        return 0;
    case OP_SPEC_CONSTANT_OP: /* word 3 is a literal opcode */
        return refuse_names(r, i, op, i + 4, i + wc);
    case OP_UNDEF: case OP_CONSTANT_NULL: case OP_CONSTANT_COMPOSITE:
    case OP_SPEC_CONSTANT_COMPOSITE:
        if (kind_of(r, w[1]) == K_CM_TYPE)
            return new_node(r, w[2], K_CONST, w[1], i);
        return refuse_names(r, i, op, i + 3, i + wc);
    case OP_COMPOSITE_CONSTRUCT: case OP_CM_LOAD_NV:
        if (op == OP_CM_LOAD_NV && kind_of(r, w[1]) != K_CM_TYPE)
            return fail(r, "OpCooperativeMatrixLoadNV at word %zu: result type is not a matrix", i);
        if (kind_of(r, w[1]) == K_CM_TYPE)
            return new_node(r, w[2], K_VALUE, w[1], i);
        return refuse_names(r, i, op, i + 3, i + wc);
    case OP_VARIABLE:
        if (kind_of(r, w[1]) == K_CM_PTR_TYPE) {
            if (new_node(r, w[2], K_VARIABLE, r->base[w[1]], i))
                return -1;
            return wc > 4 ? join(r, w[2], i + 4, i, op) : 0;
        }
        return refuse_names(r, i, op, i + 4, i + wc);
    case OP_LOAD:
        if (kind_of(r, w[1]) == K_CM_TYPE) {
            if (!is_node(r, w[3]) || kind_of(r, w[3]) != K_VARIABLE)
                return fail(r, "OpLoad at word %zu: matrix %%%u loaded through %%%u, which is not "
                               "a matrix variable", i, w[2], w[3]);
            if (new_node(r, w[2], K_VALUE, w[1], i))
                return -1;
            return join(r, w[2], i + 3, i, op);
        }
        return refuse_names(r, i, op, i + 3, i + 4);
    case OP_STORE:
        if (is_node(r, w[1]) && kind_of(r, w[1]) == K_VARIABLE)
            return join(r, w[1], i + 2, i, op);
        return refuse_names(r, i, op, i + 1, i + 3);
    case OP_CM_STORE_NV:
        if (!is_cm(r, w[2]))
            return fail(r, "OpCooperativeMatrixStoreNV at word %zu stores %%%u, not a matrix", i,
                        w[2]);
        if (kind_of(r, w[2]) == K_CONST)
            return add_site(r, i + 2, w[2], 0, USE_ACC);
        return 0;
    case OP_CM_MULADD_NV: {
        if (wc != 6 || kind_of(r, w[1]) != K_CM_TYPE)
            return fail(r, "OpCooperativeMatrixMulAddNV at word %zu: %u words, result type %%%u",
                        i, wc, w[1]);
        if (new_node(r, w[2], K_VALUE, w[1], i))
            return -1;
        for (int k = 0; k < 3; k++) {
            uint32_t o = w[3 + k];
            if (!is_cm(r, o))
                return fail(r, "OpCooperativeMatrixMulAddNV at word %zu: operand %%%u is not a "
                               "matrix", i, o);
            if (r->kind[o] == K_CONST) {
                if (add_site(r, i + 3 + k, o, 0, k))
                    return -1;
            } else if (set_use(r, o, k, i)) {
                return -1;
            }
        }
        if (set_use(r, w[2], USE_ACC, i))
            return -1;
        return join(r, w[2], i + 5, i, op);
    }
    case OP_CM_LENGTH_NV:
        if (kind_of(r, w[3]) != K_CM_TYPE)
            return fail(r, "OpCooperativeMatrixLengthNV at word %zu: %%%u is not a matrix type", i,
                        w[3]);
        return 0;
    case OP_PHI: case OP_SELECT: case OP_COPY_OBJECT: case OP_COMPOSITE_INSERT:
        if (kind_of(r, w[1]) == K_CM_TYPE) {
            if (new_node(r, w[2], K_VALUE, w[1], i))
                return -1;
            size_t from = op == OP_SELECT ? 4 : 3, step = op == OP_PHI ? 2 : 1;
            size_t to = op == OP_COMPOSITE_INSERT ? 5 : wc;
            if (op == OP_COMPOSITE_INSERT)
                from = 4;
            for (size_t k = from; k < to; k += step)
                if (join(r, w[2], i + k, i, op))
                    return -1;
            return 0;
        }
        if (op == OP_PHI) {
            for (size_t k = 3; k < wc; k += 2)
                if (refuse_names(r, i, op, i + k, i + k + 1))
                    return -1;
            return 0;
        }
        return refuse_names(r, i, op, i + 3, i + (op == OP_COMPOSITE_INSERT ? 5 : wc));
    case OP_COMPOSITE_EXTRACT:
        if (is_cm(r, w[1]))
            return fail(r, "OpCompositeExtract at word %zu yields a matrix", i);
        return 0; /* reading an element of a matrix: no use implied */
    case OP_ACCESS_CHAIN: case OP_IN_BOUNDS_ACCESS_CHAIN: case OP_PTR_ACCESS_CHAIN:
        if (is_cm(r, w[1]))
            return fail(r, "access chain at word %zu yields a pointer to a matrix", i);
        return refuse_names(r, i, op, i + 4, i + wc); /* base may be a matrix variable */
    case OP_DECORATE: case OP_MEMBER_DECORATE:
        return refuse_names(r, i, op, i + 1, i + 2);
    /* no ids that can name a matrix (or only literals, labels, strings) */
    case OP_SOURCE: case OP_SOURCE_EXT: case OP_NAME: case OP_MEMBER_NAME: case OP_STRING:
    case OP_LINE: case OP_NO_LINE: case OP_MODULE_PROCESSED: case OP_EXTENSION:
    case OP_EXT_INST_IMPORT: case OP_MEMORY_MODEL: case OP_ENTRY_POINT: case OP_EXECUTION_MODE:
    case OP_CAPABILITY: case OP_TYPE_BOOL: case OP_TYPE_FLOAT: case OP_CONSTANT:
    case OP_SPEC_CONSTANT: case OP_SPEC_CONSTANT_TRUE: case OP_SPEC_CONSTANT_FALSE:
    case OP_FUNCTION: case OP_FUNCTION_END: case OP_LABEL: case OP_BRANCH:
    case OP_BRANCH_CONDITIONAL: case OP_SWITCH: case OP_LOOP_MERGE: case OP_SELECTION_MERGE:
        return 0;
    default:
        break;
    }
    if ((is_arith(op) || is_conversion(op)) && wc >= 4 && kind_of(r, w[1]) == K_CM_TYPE) {
        if (new_node(r, w[2], K_VALUE, w[1], i))
            return -1;
        for (size_t k = 3; k < wc; k++)
            if (is_cm(r, w[k]) && join(r, w[2], i + k, i, op))
                return -1;
        return 0;
    }
    return refuse_names(r, i, op, i + 1, i + wc);
}

static int use_of(rw *r, uint32_t node)
{
    int u = r->use[find(r, node)];
    return u < 0 ? USE_ACC : u;
}

/* The use a type is looked up with (the mutation test hook folds B into A). */
static int type_use(const rw *r, int u)
{
    return (r->flags & SPVK_MUTATE_SAME_AB) && u == USE_B ? USE_A : u;
}

typedef struct obuf {
    uint32_t *w;
    size_t n, cap;
} obuf;

static int put(obuf *o, uint32_t v)
{
    if (o->n == o->cap) {
        size_t c = o->cap ? 2 * o->cap : 4096;
        uint32_t *p = realloc(o->w, c * sizeof *p);
        if (!p)
            return -1;
        o->w = p;
        o->cap = c;
    }
    o->w[o->n++] = v;
    return 0;
}

static int put_string_inst(obuf *o, uint32_t op, const char *s)
{
    size_t len = strlen(s) + 1, nw = (len + 3) / 4;
    int e = put(o, (uint32_t)((1 + nw) << 16 | op));
    for (size_t k = 0; k < nw; k++) {
        uint32_t v = 0;
        for (size_t b = 0; b < 4; b++) {
            size_t c = 4 * k + b;
            v |= (uint32_t)(uint8_t)(c < len ? s[c] : 0) << (8 * b);
        }
        e |= put(o, v);
    }
    return e;
}

static int string_is(const uint32_t *w, uint32_t nw, const char *s)
{
    size_t len = strlen(s) + 1;
    if ((len + 3) / 4 != nw)
        return 0;
    return memcmp(w, s, len) == 0;
}

/* One id per needed use of an original id (types, pointer types,
 * constants): the lowest needed use keeps the original. */
static void assign_ids(rw *r, uint32_t id)
{
    int first = 1;
    for (int u = 0; u < N_USES; u++) {
        if (!(r->need[id] & (1u << u)))
            continue;
        r->khr[id][u] = first ? id : r->next_id++;
        first = 0;
    }
}

static int resolve(rw *r)
{
    /* uses each type, pointer type and constant is needed in */
    for (uint32_t id = 1; id < r->bound; id++) {
        if (!is_node(r, id))
            continue;
        int u = type_use(r, use_of(r, id));
        r->need[r->base[id]] |= (uint8_t)(1u << u);
    }
    for (size_t s = 0; s < r->n_sites; s++) {
        site *st = &r->sites[s];
        int u = st->node ? use_of(r, st->node) : st->use;
        st->use = u;
        r->need[st->cid] |= (uint8_t)(1u << type_use(r, u));
        r->need[r->base[st->cid]] |= (uint8_t)(1u << type_use(r, u));
    }
    /* pointer types: from the variables that have them */
    for (uint32_t id = 1; id < r->bound; id++)
        if (r->kind[id] == K_VARIABLE) {
            uint32_t pt = r->w[r->rt_pos[id]];
            r->need[pt] |= (uint8_t)(1u << type_use(r, use_of(r, id)));
        }
    for (uint32_t id = 1; id < r->bound; id++) {
        uint8_t k = r->kind[id];
        if ((k == K_CM_PTR_TYPE || k == K_CONST) && !r->need[id])
            r->need[id] = 1u << USE_ACC; /* unused: any use is valid */
        if (k == K_CM_PTR_TYPE || k == K_CONST)
            r->need[r->base[id]] |= r->need[id];
    }
    for (uint32_t id = 1; id < r->bound; id++)
        if (r->kind[id] == K_CM_TYPE && !r->need[id])
            r->need[id] = 1u << USE_ACC;
    for (uint32_t id = 1; id < r->bound; id++) {
        uint8_t k = r->kind[id];
        if (k == K_CM_TYPE || k == K_CM_PTR_TYPE || k == K_CONST)
            assign_ids(r, id);
    }
    /* replacements: result types of values and variables, constant operands */
    for (uint32_t id = 1; id < r->bound; id++)
        if (is_node(r, id)) {
            size_t p = r->rt_pos[id];
            r->repl[p] = r->khr[r->w[p]][type_use(r, use_of(r, id))];
        }
    for (size_t s = 0; s < r->n_sites; s++)
        r->repl[r->sites[s].pos] = r->khr[r->sites[s].cid][type_use(r, r->sites[s].use)];
    return 0;
}

static int emit(rw *r, obuf *o)
{
    int e = 0;
    for (int k = 0; k < 5; k++)
        e |= put(o, r->w[k]);
    for (size_t i = 5; i < r->n && !e;) {
        uint32_t wc = r->w[i] >> 16, op = r->w[i] & 0xffff;
        uint32_t v[64];
        if (wc > 64 && (op == OP_CM_LOAD_NV || op == OP_CM_STORE_NV))
            return fail(r, "matrix load/store at word %zu has %u words", i, wc);
        const uint32_t *w = r->w + i;
        if (op == OP_CAPABILITY && w[1] == CAP_CM_NV) {
            e |= put(o, 2u << 16 | OP_CAPABILITY);
            e |= put(o, CAP_CM_KHR);
        } else if (op == OP_EXTENSION && string_is(w + 1, wc - 1, EXT_NV)) {
            e |= put_string_inst(o, OP_EXTENSION, EXT_KHR);
        } else if (op == OP_TYPE_CM_NV) {
            for (int u = 0; u < N_USES; u++) {
                if (!(r->need[w[1]] & (1u << u)))
                    continue;
                if (!r->consts_out)
                    return fail(r, "OpTypeCooperativeMatrixNV %%%u at word %zu precedes the "
                                   "32-bit integer type its Use constant needs", w[1], i);
                uint32_t t[7] = {7u << 16 | OP_TYPE_CM_KHR, r->khr[w[1]][u], w[2], w[3], w[4],
                                 w[5], r->use_const[u]};
                for (int k = 0; k < 7; k++)
                    e |= put(o, t[k]);
            }
        } else if ((op == OP_TYPE_POINTER && kind_of(r, w[1]) == K_CM_PTR_TYPE) ||
                   ((op == OP_UNDEF || op == OP_CONSTANT_NULL || op == OP_CONSTANT_COMPOSITE ||
                     op == OP_SPEC_CONSTANT_COMPOSITE) && kind_of(r, w[1]) == K_CM_TYPE)) {
            /* one copy per needed use: the pointer type / constant */
            uint32_t idw = op == OP_TYPE_POINTER ? 1 : 2;
            uint32_t id = w[idw];
            for (int u = 0; u < N_USES; u++) {
                if (!(r->need[id] & (1u << u)))
                    continue;
                for (uint32_t k = 0; k < wc; k++) {
                    uint32_t x = w[k];
                    if (k == idw)
                        x = r->khr[id][u];
                    else if (op == OP_TYPE_POINTER && k == 3)
                        x = r->khr[w[3]][u];
                    else if (op != OP_TYPE_POINTER && k == 1)
                        x = r->khr[w[1]][u];
                    e |= put(o, x);
                }
            }
        } else if (op == OP_CM_LOAD_NV || op == OP_CM_STORE_NV) {
            for (uint32_t k = 0; k < wc; k++)
                v[k] = r->repl[i + k] ? r->repl[i + k] : w[k];
            /* load: type, id, pointer, stride, colmajor;
             * store: pointer, object, stride, colmajor */
            uint32_t s = op == OP_CM_LOAD_NV ? 4 : 3;
            int8_t cm = v[s + 1] < r->bound ? r->boolv[v[s + 1]] : -1;
            if (cm < 0)
                return fail(r, "%s at word %zu: column-major operand %%%u is not an "
                               "OpConstantTrue/False", op_name(op), i, v[s + 1]);
            uint32_t stride = v[s];
            v[s] = r->use_const[cm ? 1 : 0]; /* MemoryLayout: RowMajor 0 / ColumnMajor 1 */
            v[s + 1] = stride;
            v[0] = wc << 16 | (op == OP_CM_LOAD_NV ? OP_CM_LOAD_KHR : OP_CM_STORE_KHR);
            for (uint32_t k = 0; k < wc; k++)
                e |= put(o, v[k]);
        } else {
            for (uint32_t k = 0; k < wc; k++) {
                uint32_t x = r->repl[i + k] ? r->repl[i + k] : w[k];
                if (k == 0 && op == OP_CM_MULADD_NV)
                    x = wc << 16 | OP_CM_MULADD_KHR;
                if (k == 0 && op == OP_CM_LENGTH_NV)
                    x = wc << 16 | OP_CM_LENGTH_KHR;
                if (k == 3 && op == OP_CM_LENGTH_NV) {
                    uint8_t nd = r->need[w[3]];
                    if (nd & (nd - 1))
                        return fail(r, "OpCooperativeMatrixLengthNV at word %zu: type %%%u is "
                                       "split by use; the length of which is meant?", i, w[3]);
                    for (int u = 0; u < N_USES; u++)
                        if (nd & (1u << u))
                            x = r->khr[w[3]][u];
                }
                e |= put(o, x);
            }
            if (op == OP_TYPE_INT && w[1] == r->int_type) {
                r->consts_out = 1;
                for (int u = 0; u < N_USES; u++) {
                    e |= put(o, 4u << 16 | OP_CONSTANT);
                    e |= put(o, w[1]);
                    e |= put(o, r->use_const[u]);
                    e |= put(o, (uint32_t)u);
                }
            }
        }
        i += wc;
    }
    if (e)
        return fail(r, "out of memory");
    o->w[3] = r->next_id; /* the new bound */
    return 0;
}

int spvk_rewrite(const uint32_t *in, size_t n_words, unsigned flags, uint32_t **out,
                 size_t *n_out, char *err, size_t cap)
{
    rw r = {.w = in, .n = n_words, .flags = flags, .err = err, .cap = cap};
    obuf o = {0};
    int rc = -1;
    *out = NULL;
    *n_out = 0;
    if (cap)
        err[0] = 0;
    if (n_words < 5 || in[0] != 0x07230203u) {
        fail(&r, "not a SPIR-V module (magic %#x)", n_words ? in[0] : 0u);
        return -1;
    }
    r.bound = in[3];
    if (r.bound == 0 || r.bound > (1u << 22)) {
        fail(&r, "id bound %u out of range", r.bound);
        return -1;
    }
    r.kind = calloc(r.bound, 1);
    r.base = calloc(r.bound, sizeof *r.base);
    r.parent = malloc(r.bound * sizeof *r.parent);
    r.use = malloc(r.bound);
    r.use_at = calloc(r.bound, sizeof *r.use_at);
    r.conv_at = calloc(r.bound, sizeof *r.conv_at);
    r.boolv = malloc(r.bound);
    r.need = calloc(r.bound, 1);
    r.khr = calloc(r.bound, sizeof *r.khr);
    r.repl = calloc(n_words, sizeof *r.repl);
    r.rt_pos = calloc(r.bound, sizeof *r.rt_pos);
    if (!r.kind || !r.base || !r.parent || !r.use || !r.use_at || !r.conv_at || !r.boolv ||
        !r.need || !r.khr ||
        !r.repl || !r.rt_pos) {
        fail(&r, "out of memory");
        goto done;
    }
    for (uint32_t k = 0; k < r.bound; k++)
        r.parent[k] = k;
    memset(r.use, -1, r.bound);
    memset(r.boolv, -1, r.bound);
    int have_nv = 0;
    for (size_t i = 5; i < n_words;) {
        uint32_t wc = in[i] >> 16, op = in[i] & 0xffff;
        if (wc == 0 || i + wc > n_words) {
            fail(&r, "instruction at word %zu has word count %u past the end", i, wc);
            goto done;
        }
        have_nv |= op == OP_TYPE_CM_NV;
        if (op == OP_TYPE_CM_KHR || (op >= OP_CM_LOAD_KHR && op <= OP_CM_LENGTH_KHR)) {
            fail(&r, "the module already has KHR cooperative-matrix instructions (word %zu)", i);
            goto done;
        }
        if (collect(&r, i, op, wc))
            goto done;
        i += wc;
    }
    if (!have_nv) {
        fail(&r, "the module has no OpTypeCooperativeMatrixNV");
        goto done;
    }
    if (!r.int_type) {
        fail(&r, "the module has no 32-bit OpTypeInt for the Use / MemoryLayout constants");
        goto done;
    }
    r.next_id = r.bound;
    for (int u = 0; u < N_USES; u++)
        r.use_const[u] = r.next_id++;
    if (resolve(&r) || emit(&r, &o))
        goto done;
    *out = o.w;
    *n_out = o.n;
    o.w = NULL;
    rc = 0;
done:
    free(o.w);
    free(r.kind);
    free(r.base);
    free(r.parent);
    free(r.use);
    free(r.use_at);
    free(r.conv_at);
    free(r.boolv);
    free(r.need);
    free(r.khr);
    free(r.repl);
    free(r.rt_pos);
    free(r.sites);
    return rc;
}
