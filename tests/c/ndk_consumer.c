/* An NDK consumer in C over include/ndkpi.h and librsndk.so, on `mem:`
 * adapters: two NDK_ADAPTER instances of one device (opened at NDKPI 2.1)
 * whose objects combine in one connection (a QP of one instance's PD with
 * both instances' CQs, a connector of the other), the 2.1 entries
 * (NdkAcceptEx, NdkCompleteConnectEx and the disconnect reason),
 * NdkGetConnectionData after the connect completed, and a fast-register
 * MR whose initial token serves three register / RDMA / invalidate rounds.
 * Exit status 0 = pass; otherwise it prints what failed. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer.h"
#include "ndkpi.h"
#include "rsndk_host.h"

static SOCKADDR_IN address(UCHAR last, USHORT port)
{
    SOCKADDR_IN a;
    memset(&a, 0, sizeof(a));
    a.sin_family = RSNDK_AF_INET;
    a.sin_port = (USHORT)((port >> 8) | (port << 8));
    a.sin_addr.S_un.S_un_b.s_b1 = 10;
    a.sin_addr.S_un.S_un_b.s_b2 = 77;
    a.sin_addr.S_un.S_un_b.s_b3 = 0;
    a.sin_addr.S_un.S_un_b.s_b4 = last;
    return a;
}


/* The read limits and private data a connector reports. */
static void connection_data(NDK_CONNECTOR *c, const char *what, const char *data)
{
    /* The RNIC reports the whole private-data field of the CM message
     * (the data, then zeros): up to MaxCalleeData (196) bytes. */
    ULONG ird = 0, ord = 0, len = 256;
    char buf[256];
    memset(buf, 0, sizeof(buf));
    expect(what, c->Dispatch->NdkGetConnectionData(c, &ird, &ord, buf, &len), STATUS_SUCCESS);
    check(what, ird == 4 && ord == 4);
    check(what, memcmp(buf, data, strlen(data)) == 0);
}

int main(void)
{
    const char *config = "mem:cconsumer/10.77.0.1";
    NDK_ADAPTER *a = NULL, *b = NULL;

    /* Two instances of one device, both at NDKPI 2.1. */
    expect("open a", RsNdkOpenAdapterEx(config, 2, 1, &a), STATUS_SUCCESS);
    expect("open b", RsNdkOpenAdapterEx(config, 2, 0, &b), STATUS_SUCCESS);
    if (a == NULL || b == NULL) {
        printf("%d failures\n", failures);
        return 1;
    }
    check("version 2.1", a->Header.Version.Major == 2 && a->Header.Version.Minor == 1);
    check("2.0 is served at 2.1", b->Header.Version.Major == 2 && b->Header.Version.Minor == 1);

    NDK_PD *pd_a = create_pd(a), *pd_b = create_pd(b);
    NDK_CQ *cq_a = create_cq(a), *cq_b = create_cq(b);
    /* The active QP: A's PD, B's CQ for receives, A's for its requests. */
    NDK_QP *qa = create_qp(pd_a, cq_b, cq_a);
    NDK_QP *qb = create_qp(pd_b, cq_b, cq_b);

    /* A listens; B's connector connects A's QP. */
    struct event listened = {0};
    NDK_LISTENER *listener = NULL;
    expect("create listener",
           a->Dispatch->NdkCreateListener(a, on_connect, &listened, NULL, NULL, &listener),
           STATUS_SUCCESS);
    SOCKADDR_IN at = address(1, 7001), from = address(1, 0);
    expect("listen",
           listener->Dispatch->NdkListen(listener, (PSOCKADDR)&at, sizeof(at), NULL, NULL),
           STATUS_SUCCESS);
    NDK_CONNECTOR *active = NULL;
    expect("create connector", b->Dispatch->NdkCreateConnector(b, NULL, NULL, &active),
           STATUS_SUCCESS);
    check("the 2.1 table", active->Dispatch->NdkCompleteConnectEx != NULL &&
                               active->Dispatch->NdkAcceptEx != NULL);
    struct event connected = {0}, accepted = {0}, active_disc = {0}, passive_disc = {0};
    char hello[] = "c-hello", welcome[] = "c-welcome";
    expect("connect",
           active->Dispatch->NdkConnect(active, qa, (PSOCKADDR)&from, sizeof(from),
                                        (PSOCKADDR)&at, sizeof(at), 4, 4, hello, 7, on_request,
                                        &connected),
           STATUS_PENDING);
    wait_for(&listened, "the connect event");
    NDK_CONNECTOR *passive = listened.object;
    if (passive == NULL) {
        printf("%d failures\n", failures);
        return 1;
    }
    connection_data(passive, "request data", "c-hello");
    expect("accept ex",
           passive->Dispatch->NdkAcceptEx(passive, qb, 4, 4, welcome, 9, on_disconnect_ex,
                                          &passive_disc, on_request, &accepted),
           STATUS_PENDING);
    wait_for(&connected, "the connect");
    expect("connect completes", connected.status, STATUS_SUCCESS);
    expect("complete connect ex",
           active->Dispatch->NdkCompleteConnectEx(active, on_disconnect_ex, &active_disc, NULL,
                                                  NULL),
           STATUS_SUCCESS);
    wait_for(&accepted, "the accept");
    expect("accept completes", accepted.status, STATUS_SUCCESS);
    /* Connection data after the connect completed, on both sides. */
    connection_data(active, "connection data after CompleteConnectEx", "c-welcome");
    connection_data(passive, "connection data after AcceptEx", "c-hello");

    /* B's fast-register MR over one page, its page from NdkBuildLAM. */
    unsigned char *target = aligned_alloc(PAGE_SIZE, PAGE_SIZE);
    unsigned char *local = aligned_alloc(PAGE_SIZE, PAGE_SIZE);
    if (target == NULL || local == NULL) {
        printf("FAIL memory\n%d failures\n", failures + 1);
        return 1;
    }
    memset(target, 0, PAGE_SIZE);
    memset(local, 0, PAGE_SIZE);
    MDL *mdl = RsNdkAllocateMdl(target, PAGE_SIZE);
    check("mdl", mdl != NULL);
    uint64_t lam_buf[4];
    NDK_LOGICAL_ADDRESS_MAPPING *lam = (NDK_LOGICAL_ADDRESS_MAPPING *)lam_buf;
    ULONG lam_size = sizeof(lam_buf), fbo = 1;
    expect("build lam",
           b->Dispatch->NdkBuildLAM(b, mdl, PAGE_SIZE, NULL, NULL, lam, &lam_size, &fbo),
           STATUS_SUCCESS);
    check("one page at offset 0", lam->AdapterPageCount == 1 && fbo == 0);
    NDK_LOGICAL_ADDRESS page = lam->AdapterPageArray[0];
    NDK_MR *mr = NULL;
    expect("create mr", pd_b->Dispatch->NdkCreateMr(pd_b, TRUE, NULL, NULL, &mr), STATUS_SUCCESS);
    expect("initialize fast register",
           mr->Dispatch->NdkInitializeFastRegisterMr(mr, 1, TRUE, NULL, NULL), STATUS_SUCCESS);
    UINT32 token = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    check("one token for both uses", mr->Dispatch->NdkGetLocalTokenFromMr(mr) == token);
    UINT32 local_token = privileged_token(pd_a);

    for (int round = 0; round < 3; round++) {
        char what[64];
        snprintf(what, sizeof(what), "round %d fast register", round);
        expect(what,
               qb->Dispatch->NdkFastRegister(
                   qb, NULL, mr, 1, &page, 0, PAGE_SIZE, target,
                   NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
               STATUS_SUCCESS);
        check("the initial token", mr->Dispatch->NdkGetRemoteTokenFromMr(mr) == token &&
                                       mr->Dispatch->NdkGetLocalTokenFromMr(mr) == token);
        NDK_RESULT_EX r = next_result(cq_b, what);
        expect(what, r.Status, STATUS_SUCCESS);
        check("a fast-register completion", r.Type == NdkOperationTypeFastRegister);

        /* A writes through the token, then reads it back. */
        char msg[32];
        int n = snprintf(msg, sizeof(msg), "round %d via %08x", round, (unsigned)token);
        memcpy(local, msg, (size_t)n);
        NDK_SGE out = {.VirtualAddress = local, .Length = (ULONG)n,
                       .MemoryRegionToken = local_token};
        UINT64 remote = (UINT64)(uintptr_t)target + 64 * (UINT64)round;
        snprintf(what, sizeof(what), "round %d write", round);
        expect(what, qa->Dispatch->NdkWrite(qa, NULL, &out, 1, remote, token, 0), STATUS_SUCCESS);
        r = next_result(cq_a, what);
        expect(what, r.Status, STATUS_SUCCESS);
        check("written", memcmp(target + 64 * round, msg, (size_t)n) == 0);
        NDK_SGE in = {.VirtualAddress = local + 2048, .Length = (ULONG)n,
                      .MemoryRegionToken = local_token};
        snprintf(what, sizeof(what), "round %d read", round);
        expect(what, qa->Dispatch->NdkRead(qa, NULL, &in, 1, remote, token, 0), STATUS_SUCCESS);
        r = next_result(cq_a, what);
        expect(what, r.Status, STATUS_SUCCESS);
        check("read back", memcmp(local + 2048, msg, (size_t)n) == 0);

        snprintf(what, sizeof(what), "round %d invalidate", round);
        expect(what, qb->Dispatch->NdkInvalidate(qb, NULL, &mr->Header, 0), STATUS_SUCCESS);
        r = next_result(cq_b, what);
        expect(what, r.Status, STATUS_SUCCESS);
        check("an invalidate completion", r.Type == NdkOperationTypeInvalidate);
        check("the token survives the invalidation",
              mr->Dispatch->NdkGetRemoteTokenFromMr(mr) == token);
    }

    /* A leaves: B's side hears it, with the peer reason. */
    struct event disconnected = {0};
    expect("disconnect",
           active->Dispatch->NdkDisconnect(active, on_request, &disconnected), STATUS_PENDING);
    wait_for(&disconnected, "the disconnect");
    expect("disconnect completes", disconnected.status, STATUS_SUCCESS);
    wait_for(&passive_disc, "the peer's disconnect event");
    check("one disconnect event", atomic_load(&passive_disc.done) == 1);
    check("the peer reason", passive_disc.reason == RSNDK_DISCONNECT_REASON_PEER);
    check("none for our own disconnect", atomic_load(&active_disc.done) == 0);

    close_object(mr, "close mr");
    b->Dispatch->NdkReleaseLAM(b, lam);
    close_object(active, "close active");
    close_object(passive, "close passive");
    close_object(listener, "close listener");
    close_object(qa, "close qa");
    close_object(qb, "close qb");
    close_object(cq_a, "close cq a");
    close_object(cq_b, "close cq b");
    close_object(pd_a, "close pd a");
    close_object(pd_b, "close pd b");
    expect("close b", RsNdkCloseAdapter(b), STATUS_SUCCESS);
    expect("close a", RsNdkCloseAdapter(a), STATUS_SUCCESS);
    RsNdkFreeMdl(mdl);
    free(target);
    free(local);
    printf("%d failures\n", failures);
    return failures != 0;
}
