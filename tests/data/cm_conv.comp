#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
/* For tests/test_spv_khr.c: an accumulator converted to an A operand,
 * which SPV_KHR_cooperative_matrix forbids (a conversion between uses);
 * the NV -> KHR rewriter (tools/spv_khr.h) must refuse it by name. With
 * -DCM_FUNC instead: a function taking a matrix, whose type the rewriter
 * does not split (refused naming the function type). */
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer B { float16_t h[]; float f[]; };
shared float16_t sh[256];
shared float sf[256];
#ifdef CM_FUNC
fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> twice(fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> m)
{
    return m + m;
}
#endif
void main()
{
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
    coopMatLoadNV(a, sh, 0, 16, false);
    coopMatLoadNV(b, sh, 0, 16, true);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    c = coopMatMulAddNV(a, b, c);
#ifdef CM_FUNC
    c = twice(c);
#else
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a2 = fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>(c);
    c = coopMatMulAddNV(a2, b, c);
#endif
    coopMatStoreNV(c, sf, 0, 16, false);
}
