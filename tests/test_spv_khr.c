/* The NV -> KHR cooperative-matrix rewriter (tools/spv_khr.h) without a
 * device: the embedded KHR module of attn_cm.comp checked word by word
 * against its NV source by this file's own reading of the two extension
 * specifications (types per use, every MulAdd's A/B/C uses and dimensions,
 * load/store operands moved and the column-major bool turned into a
 * MemoryLayout constant, no NV opcode or capability left, every function
 * body the same instruction for instruction), the rewriter run here giving
 * the embedded words exactly, a broken rewrite (A and B sharing a type)
 * failing the same check, and a conversion between uses refused by name.
 * usage: test_spv_khr CONV.spv FUNC.spv (tests/data/cm_conv.comp compiled,
 * plain and with -DCM_FUNC). */
#include "rl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn_cm.h"
#include "rl_test.h"
#include "spv_khr.h"

static const char *conv_path, *func_path;

enum {
    OP_EXTENSION = 10, OP_CAPABILITY = 17, OP_TYPE_INT = 21, OP_TYPE_POINTER = 32,
    OP_CONSTANT_TRUE = 41, OP_CONSTANT_FALSE = 42, OP_CONSTANT = 43, OP_SPEC_CONSTANT = 50,
    OP_FUNCTION = 54, OP_VARIABLE = 59, OP_LOAD = 61, OP_STORE = 62,
    CAP_NV = 5357, CAP_KHR = 6022,
    T_NV = 5358, LOAD_NV = 5359, STORE_NV = 5360, MULADD_NV = 5361, LENGTH_NV = 5362,
    T_KHR = 4456, LOAD_KHR = 4457, STORE_KHR = 4458, MULADD_KHR = 4459, LENGTH_KHR = 4460,
};

/* What the check reads of one module. */
typedef struct mod {
    const uint32_t *w;
    size_t n;
    uint32_t bound;
    uint32_t *cval;     /* [bound] OpConstant / OpSpecConstant value + 1 (0: not one) */
    int8_t *boolc;      /* [bound] OpConstantTrue 1 / False 0 / -1 */
    uint32_t *tdef;     /* [bound] cooperative-matrix type: word index of its definition */
    uint32_t *ptee;     /* [bound] pointer type -> pointee type */
    uint32_t *vtype;    /* [bound] value / variable -> its result type */
    size_t body;        /* word index of the first OpFunction */
} mod;

static void mod_read(mod *m, const uint32_t *w, size_t n)
{
    memset(m, 0, sizeof *m);
    m->w = w;
    m->n = n;
    ck_assert_uint_ge(n, 5);
    ck_assert_uint_eq(w[0], 0x07230203u);
    m->bound = w[3];
    m->cval = calloc(m->bound, sizeof *m->cval);
    m->boolc = malloc(m->bound);
    m->tdef = calloc(m->bound, sizeof *m->tdef);
    m->ptee = calloc(m->bound, sizeof *m->ptee);
    m->vtype = calloc(m->bound, sizeof *m->vtype);
    ck_assert(m->cval && m->boolc && m->tdef && m->ptee && m->vtype);
    memset(m->boolc, -1, m->bound);
    for (size_t i = 5; i < n;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        ck_assert_uint_gt(wc, 0);
        ck_assert_uint_le(i + wc, n);
        if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT) && wc == 4)
            m->cval[w[i + 2]] = w[i + 3] + 1;
        if (op == OP_CONSTANT_TRUE || op == OP_CONSTANT_FALSE)
            m->boolc[w[i + 2]] = op == OP_CONSTANT_TRUE;
        if (op == T_NV || op == T_KHR)
            m->tdef[w[i + 1]] = (uint32_t)i;
        if (op == OP_TYPE_POINTER)
            m->ptee[w[i + 1]] = w[i + 3];
        if (op == OP_FUNCTION && !m->body)
            m->body = i;
        /* result type + result id: the instructions a matrix value comes from */
        if (op == OP_VARIABLE || op == OP_LOAD || op == LOAD_NV || op == LOAD_KHR ||
            op == MULADD_NV || op == MULADD_KHR || op == 44 /* OpConstantComposite */)
            m->vtype[w[i + 2]] = w[i + 1];
        i += wc;
    }
}

static void mod_free(mod *m)
{
    free(m->cval);
    free(m->boolc);
    free(m->tdef);
    free(m->ptee);
    free(m->vtype);
}

/* The Use of KHR type t (0 A, 1 B, 2 accumulator), -1 when t is not one. */
static int use_of(const mod *m, uint32_t t)
{
    if (t >= m->bound || !m->tdef[t] || (m->w[m->tdef[t]] & 0xffff) != T_KHR)
        return -1;
    uint32_t c = m->w[m->tdef[t] + 6];
    return m->cval[c] ? (int)(m->cval[c] - 1) : -1;
}

#define FAILF(...) do { snprintf(msg, cap, __VA_ARGS__); return 0; } while (0)

/* 1 when khr is a faithful SPV_KHR_cooperative_matrix rewrite of nv, else 0
 * with msg saying the first difference. */
static int khr_matches(const mod *nv, const mod *k, char *msg, size_t cap)
{
    const uint32_t *w = k->w;
    int cap_khr = 0, ext_khr = 0;
    if (w[1] < 0x00010300u)
        FAILF("SPIR-V version %#x < 1.3 (SPV_KHR_cooperative_matrix needs 1.3)", w[1]);
    /* no NV left; the capability and extension; one type per (shape, use) */
    for (size_t i = 5; i < k->n; i += w[i] >> 16) {
        uint32_t op = w[i] & 0xffff;
        if (op >= T_NV && op <= LENGTH_NV)
            FAILF("NV opcode %u left at word %zu", op, i);
        if (op == OP_CAPABILITY && w[i + 1] == CAP_NV)
            FAILF("capability CooperativeMatrixNV left");
        cap_khr += op == OP_CAPABILITY && w[i + 1] == CAP_KHR;
        if (op == OP_EXTENSION && !strcmp((const char *)&w[i + 1], "SPV_NV_cooperative_matrix"))
            FAILF("extension SPV_NV_cooperative_matrix left");
        ext_khr += op == OP_EXTENSION &&
                   !strcmp((const char *)&w[i + 1], "SPV_KHR_cooperative_matrix");
        if (op == T_KHR) {
            if ((w[i] >> 16) != 7)
                FAILF("OpTypeCooperativeMatrixKHR %%%u has %u words (7)", w[i + 1], w[i] >> 16);
            if (use_of(k, w[i + 1]) < 0 || use_of(k, w[i + 1]) > 2)
                FAILF("type %%%u: Use is not the constant 0, 1 or 2", w[i + 1]);
            for (size_t j = 5; j < i; j += w[j] >> 16)
                if ((w[j] & 0xffff) == T_KHR && !memcmp(&w[j + 2], &w[i + 2], 5 * 4))
                    FAILF("types %%%u and %%%u are the same (component, scope, dims, use)",
                          w[j + 1], w[i + 1]);
        }
    }
    if (cap_khr != 1 || ext_khr != 1)
        FAILF("capability CooperativeMatrixKHR x%d, extension SPV_KHR_cooperative_matrix x%d",
              cap_khr, ext_khr);
    /* function bodies: instruction for instruction */
    size_t a = nv->body, b = k->body;
    int muladds = 0, loads = 0, stores = 0;
    while (a < nv->n && b < k->n) {
        const uint32_t *x = nv->w + a, *y = w + b;
        uint32_t xw = x[0] >> 16, yw = y[0] >> 16, xo = x[0] & 0xffff, yo = y[0] & 0xffff;
        if (xw != yw)
            FAILF("word %zu / %zu: %u words against %u", a, b, xw, yw);
        if (xo == MULADD_NV) {
            if (yo != MULADD_KHR || memcmp(x + 2, y + 2, 4 * 4))
                FAILF("MulAdd at %zu: not OpCooperativeMatrixMulAddKHR with the same ids", b);
            uint32_t ta = k->vtype[y[3]], tb = k->vtype[y[4]], tc = k->vtype[y[5]];
            if (use_of(k, ta) != 0 || use_of(k, tb) != 1 || use_of(k, tc) != 2 ||
                use_of(k, y[1]) != 2 || y[1] != tc)
                FAILF("MulAdd %%%u at %zu: uses A %d, B %d, C %d, result %d (0 1 2 2), result "
                      "type %%%u, C's %%%u", y[2], b, use_of(k, ta), use_of(k, tb),
                      use_of(k, tc), use_of(k, y[1]), y[1], tc);
            const uint32_t *A = w + k->tdef[ta], *B = w + k->tdef[tb], *C = w + k->tdef[tc];
            if (A[4] != C[4] || A[5] != B[4] || B[5] != C[5])
                FAILF("MulAdd %%%u: A %%%ux%%%u, B %%%ux%%%u, C %%%ux%%%u do not chain", y[2], A[4],
                      A[5], B[4], B[5], C[4], C[5]);
            muladds++;
        } else if (xo == LOAD_NV || xo == STORE_NV) {
            int ld = xo == LOAD_NV;
            size_t s = ld ? 4 : 3; /* NV: stride, column-major; KHR: layout, stride */
            if (yo != (ld ? LOAD_KHR : STORE_KHR) || memcmp(x + 1, y + 1, (s - 1) * 4) ||
                memcmp(x + s + 2, y + s + 2, (xw - s - 2) * 4))
                FAILF("%s at %zu: not the KHR one with the same pointer and memory operands",
                      ld ? "load" : "store", b);
            if (y[s + 1] != x[s])
                FAILF("%s at %zu: stride %%%u, NV's %%%u", ld ? "load" : "store", b, y[s + 1], x[s]);
            int cm = nv->boolc[x[s + 1]];
            if (cm < 0 || k->cval[y[s]] != (uint32_t)cm + 1)
                FAILF("%s at %zu: layout constant %%%u is not %d (NV column-major %%%u)",
                      ld ? "load" : "store", b, y[s], cm, x[s + 1]);
            if (ld && (use_of(k, y[1]) < 0 ||
                       memcmp(&w[k->tdef[y[1]] + 2], &nv->w[nv->tdef[x[1]] + 2], 4 * 4)))
                FAILF("load at %zu: result type %%%u is not a KHR type of NV's %%%u", b, y[1],
                      x[1]);
            loads += ld;
            stores += !ld;
        } else if (xo == LENGTH_NV) {
            if (yo != LENGTH_KHR)
                FAILF("LengthNV at %zu not rewritten", a);
        } else {
            if (xo != yo)
                FAILF("word %zu / %zu: opcode %u against %u", a, b, xo, yo);
            for (uint32_t j = 1; j < xw; j++) {
                if (x[j] == y[j])
                    continue;
                /* only a result type may differ: an NV matrix type / pointer
                 * to it becomes a KHR type of the same shape / pointer to it */
                uint32_t tx = x[j], ty = y[j];
                if (j == 1 && tx < nv->bound && nv->ptee[tx] && ty < k->bound && k->ptee[ty]) {
                    tx = nv->ptee[tx];
                    ty = k->ptee[ty];
                }
                if (j != 1 || tx >= nv->bound || !nv->tdef[tx] || use_of(k, ty) < 0 ||
                    memcmp(&w[k->tdef[ty] + 2], &nv->w[nv->tdef[tx] + 2], 4 * 4))
                    FAILF("word %zu / %zu (opcode %u): operand %u is %%%u, NV's %%%u", a, b, xo, j,
                          y[j], x[j]);
            }
        }
        /* values keep their use: a load from a variable has its pointee's type */
        if (yo == OP_LOAD && use_of(k, y[1]) >= 0 && k->ptee[k->vtype[y[3]]] != y[1])
            FAILF("OpLoad %%%u at %zu: type %%%u, its variable's %%%u", y[2], b, y[1],
                  k->ptee[k->vtype[y[3]]]);
        if (yo == OP_STORE && k->vtype[y[1]] && use_of(k, k->ptee[k->vtype[y[1]]]) >= 0 &&
            k->vtype[y[2]] && k->ptee[k->vtype[y[1]]] != k->vtype[y[2]])
            FAILF("OpStore at %zu: value %%%u of type %%%u into a variable of %%%u", b, y[2],
                  k->vtype[y[2]], k->ptee[k->vtype[y[1]]]);
        a += xw;
        b += yw;
    }
    if (a != nv->n || b != k->n)
        FAILF("function bodies differ in length (NV word %zu of %zu, KHR %zu of %zu)", a, nv->n,
              b, k->n);
    if (muladds != 2 || loads != 4 || stores != 2)
        FAILF("%d MulAdd, %d loads, %d stores (2, 4, 2)", muladds, loads, stores);
    return 1;
}

START_TEST(embedded_khr_module_is_the_nv_module_rewritten_rule_by_rule)
{
    size_t nb, kb;
    const uint32_t *nw = attn_cm_spirv(ATTN_CM_SPV_NV, &nb), *kw = attn_cm_spirv(ATTN_CM_SPV_KHR, &kb);
    mod nv, k;
    mod_read(&nv, nw, nb / 4);
    mod_read(&k, kw, kb / 4);
    char msg[512];
    ck_assert_msg(khr_matches(&nv, &k, msg, sizeof msg), "%s", msg);
    /* attn_cm.comp's QK^T A and B are both 16-bit CM_M x CM_K / CM_K x CM_N,
     * PV's CM_M x CM_N / CM_N x CM_K: four fp16 types and two fp32 ones,
     * each with the use of its place in the product */
    int per_use[3] = {0, 0, 0};
    for (size_t i = 5; i < k.n; i += kw[i] >> 16)
        if ((kw[i] & 0xffff) == T_KHR)
            per_use[use_of(&k, kw[i + 1])]++;
    ck_assert_int_ge(per_use[0], 1);
    ck_assert_int_ge(per_use[1], 1);
    ck_assert_int_ge(per_use[2], 1);
    mod_free(&nv);
    mod_free(&k);
}
END_TEST

START_TEST(rewriter_here_gives_the_embedded_words_and_a_shared_ab_type_fails)
{
    size_t nb, kb;
    const uint32_t *nw = attn_cm_spirv(ATTN_CM_SPV_NV, &nb), *kw = attn_cm_spirv(ATTN_CM_SPV_KHR, &kb);
    uint32_t *out = NULL;
    size_t n_out = 0;
    char err[512];
    ck_assert_msg(spvk_rewrite(nw, nb / 4, 0, &out, &n_out, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(n_out, kb / 4);
    ck_assert(!memcmp(out, kw, kb));
    free(out);
    /* the mutation: B operands typed with the A use */
    ck_assert_msg(spvk_rewrite(nw, nb / 4, SPVK_MUTATE_SAME_AB, &out, &n_out, err, sizeof err) == 0,
                  "%s", err);
    mod nv, k;
    mod_read(&nv, nw, nb / 4);
    mod_read(&k, out, n_out);
    char msg[512];
    ck_assert(!khr_matches(&nv, &k, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "B 0"), "'%s'", msg);
    mod_free(&nv);
    mod_free(&k);
    free(out);
}
END_TEST

static size_t read_spv(const char *path, uint32_t *w, size_t cap)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(w, 4, cap, f);
    fclose(f);
    ck_assert_uint_gt(n, 5);
    ck_assert_uint_lt(n, cap);
    return n;
}

START_TEST(rewriter_refuses_a_conversion_between_uses_and_bad_input)
{
    uint32_t w[4096];
    size_t n = read_spv(conv_path, w, 4096);
    uint32_t *out = NULL;
    size_t n_out = 0;
    char err[512];
    ck_assert_int_eq(spvk_rewrite(w, n, 0, &out, &n_out, err, sizeof err), -1);
    ck_assert_ptr_null(out);
    ck_assert_msg(strstr(err, "conversion between uses is not allowed"), "'%s'", err);
    ck_assert_msg(strstr(err, "MatrixA") && strstr(err, "MatrixAccumulator"), "'%s'", err);
    uint32_t junk[8] = {0x12345678u, 0, 0, 10, 0};
    ck_assert_int_eq(spvk_rewrite(junk, 8, 0, &out, &n_out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "not a SPIR-V module"), "'%s'", err);
    /* a module with no NV matrix (the emulated variant) */
    size_t eb;
    const uint32_t *ew = attn_cm_spirv(ATTN_CM_SPV_EMU, &eb);
    ck_assert_int_eq(spvk_rewrite(ew, eb / 4, 0, &out, &n_out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "no OpTypeCooperativeMatrixNV"), "'%s'", err);
    /* a function taking and returning a matrix: its type is not split */
    n = read_spv(func_path, w, 4096);
    ck_assert_int_eq(spvk_rewrite(w, n, 0, &out, &n_out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "function type") && strstr(err, "takes or returns a cooperative "
                                                         "matrix"), "'%s'", err);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_spv_khr CONV.spv FUNC.spv\n");
        return 2;
    }
    conv_path = argv[1];
    func_path = argv[2];
    Suite *s = suite_create("spv_khr");
    TCase *tc = tcase_create("rewrite");
    tcase_add_test(tc, embedded_khr_module_is_the_nv_module_rewritten_rule_by_rule);
    tcase_add_test(tc, rewriter_here_gives_the_embedded_words_and_a_shared_ab_type_fails);
    tcase_add_test(tc, rewriter_refuses_a_conversion_between_uses_and_bad_input);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
