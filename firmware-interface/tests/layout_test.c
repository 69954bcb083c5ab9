/* Compiles every firmware-interface header as C11 and C++20 (see Makefile);
 * the static asserts in the headers are the test. */
#include <ohca/ohca_regs.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca-abi.h>

OHCA_ASSERT_SIZE(struct ohca_ibv_alloc_ucontext, 8);
OHCA_ASSERT_SIZE(struct ohca_ibv_alloc_ucontext_resp, 24);
OHCA_ASSERT_OFFSET(struct ohca_ibv_alloc_ucontext_resp, db_mmap_key, 8);
OHCA_ASSERT_OFFSET(struct ohca_ibv_alloc_ucontext_resp, max_inline, 16);
OHCA_ASSERT_OFFSET(struct ohca_ibv_alloc_ucontext_resp, device_caps, 20);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_cq, 24);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_cq_resp, 8);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_cq, comp_mask, 12);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_cq, db_addr, 16);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_qp, 40);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_qp, comp_mask, 24);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_qp, rq_db_addr, 32);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_qp_resp, 8);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_srq, 24);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_srq, comp_mask, 12);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_srq, db_addr, 16);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_srq_resp, 8);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_wq, 16);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_wq, comp_mask, 12);
OHCA_ASSERT_SIZE(struct ohca_ibv_create_rss_qp, 56);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_rss_qp, comp_mask, 12);
OHCA_ASSERT_OFFSET(struct ohca_ibv_create_rss_qp, rx_hash_key, 16);

int main(void)
{
	return 0;
}
