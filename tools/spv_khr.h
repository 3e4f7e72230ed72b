/* spv_khr.h — SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix
 * (prefix spvk_). A build-time SPIR-V rewriter: glslang 12 (bookworm) has
 * no GL_KHR_cooperative_matrix, so shaders/attn_cm.comp is compiled as NV
 * SPIR-V and this turns the module into its KHR twin (shaders/meson.build).
 *
 * The rewrite (from the SPV_KHR_cooperative_matrix and SPV_NV_cooperative_matrix
 * specifications; KHR needs SPIR-V 1.3 and, with Shader, the Vulkan memory
 * model, both of which the NV module already has):
 *  - OpCapability CooperativeMatrixNV (5357) -> CooperativeMatrixKHR (6022),
 *    OpExtension "SPV_NV_cooperative_matrix" -> "SPV_KHR_cooperative_matrix";
 *  - OpTypeCooperativeMatrixNV (5358: id, component, scope, rows, cols) ->
 *    OpTypeCooperativeMatrixKHR (4456: + Use id, MatrixA 0 / MatrixB 1 /
 *    MatrixAccumulator 2), one type per (NV type, Use) that occurs, and
 *    likewise the pointer types to it and the constants of it;
 *  - OpCooperativeMatrixLoadNV (5359: type, id, pointer, stride, column-major
 *    bool id [, memory access]) -> OpCooperativeMatrixLoadKHR (4457: type,
 *    id, pointer, MemoryLayout int id RowMajor 0 / ColumnMajor 1, stride
 *    [, memory operand]); StoreNV (5360: pointer, object, stride, column
 *    major [, ...]) -> StoreKHR (4458: pointer, object, layout, stride
 *    [, ...]); MulAddNV (5361) -> MulAddKHR (4459); LengthNV (5362) ->
 *    LengthKHR (4460).
 * Each cooperative-matrix value's Use is inferred by union-find over ids:
 * MulAdd fixes its A, B and C operands (and its result joins C); OpLoad /
 * OpStore join a value with its variable, OpPhi / OpSelect / OpCopyObject /
 * arithmetic / OpCompositeInsert join their result with their matrix
 * operands; a conversion joins too, so one between two uses (which KHR
 * forbids) is a conflict. Constants (OpConstantComposite, OpConstantNull,
 * OpUndef) take the use of each place that reads them, cloned per use. A
 * class that no MulAdd reaches (only loaded and stored) is an accumulator.
 * Refused, with the instruction named: conflicting uses, functions taking
 * or returning matrices, composites of matrices, spec-constant layouts, a
 * LengthNV of a type split in two, and any other instruction that names a
 * matrix value or type. */
#ifndef SPV_KHR_H
#define SPV_KHR_H

#include <stddef.h>
#include <stdint.h>

enum {
    SPVK_OK = 0,
    SPVK_MUTATE_SAME_AB = 1, /* test hook: give A and B the same KHR type (invalid) */
};

/* Rewrites the NV module in[0..n_words) into a malloc'd KHR module
 * (*out, *n_out words; the caller frees it). flags: 0, or SPVK_MUTATE_*
 * for tests. Returns 0, or -1 with err (cap bytes) naming the problem, e.g.
 * "instruction 812 (OpFConvert, %301): conversion joins MatrixA and
 * MatrixAccumulator". A module without NV cooperative matrices is refused. */
int spvk_rewrite(const uint32_t *in, size_t n_words, unsigned flags, uint32_t **out,
                 size_t *n_out, char *err, size_t cap);

#endif
