/* rl_common.glsl — included first by every ropelab compute shader. */

/* Specialization constant 0 is the workgroup size (see rlvk_pipeline_desc). */
layout(local_size_x_id = 0) in;

/* Linear workgroup index across the split dispatches. */
#define RL_GROUP_ID (pc.p.group_base + gl_WorkGroupID.x)
