/* An NDK consumer in C over include/ndkpi.h and librsndk.so, over IPv6:
 * two adapters on one in-memory fabric, mem:lab/[fd00::1] and
 * mem:lab/[fd00::2]. B listens and A connects with SOCKADDR_IN6
 * addresses (sin6_family AF_INET6, which is Winsock's 23); every address
 * the provider reports back (listener, both connectors' local and peer)
 * is a 28-byte SOCKADDR_IN6 of the right address and port; an IPv4
 * address is refused on an IPv6 adapter (STATUS_INVALID_ADDRESS). Then a
 * SEND from A to B and an RDMA READ by A of B's registered memory move
 * data, verified byte for byte, over RoCEv2 over IPv6.
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

static USHORT network_order(USHORT port)
{
    return (USHORT)((port >> 8) | (port << 8));
}

/* fd00::<last>, or :: for last 0, and a port (host order). */
static SOCKADDR_IN6 address6(UCHAR last, USHORT port)
{
    SOCKADDR_IN6 a;
    memset(&a, 0, sizeof(a));
    a.sin6_family = RSNDK_AF_INET6;
    a.sin6_port = network_order(port);
    if (last != 0) {
        a.sin6_addr.u.Byte[0] = 0xfd;
        a.sin6_addr.u.Byte[15] = last;
    }
    return a;
}

/* Checks that `got` (as written back, `len` bytes) is fd00::<last>,
 * and returns its port (host order). */
static USHORT check_address6(const char *what, const SOCKADDR_IN6 *got, ULONG len, UCHAR last)
{
    SOCKADDR_IN6 want = address6(last, 0);
    check(what, len == sizeof(SOCKADDR_IN6));
    check(what, got->sin6_family == 23 && got->sin6_family == RSNDK_AF_INET6);
    check(what, memcmp(&got->sin6_addr, &want.sin6_addr, sizeof(want.sin6_addr)) == 0);
    return network_order(got->sin6_port);
}

typedef NTSTATUS(NDKAPI *connector_address_fn)(NDK_CONNECTOR *, PSOCKADDR, ULONG *);

/* A connector's local or peer address, which must be fd00::<last>; its
 * port. A SOCKADDR_IN's worth of buffer is too small for it. */
static USHORT connector_address(connector_address_fn f, NDK_CONNECTOR *c, const char *what,
                                UCHAR last)
{
    SOCKADDR_IN6 got;
    memset(&got, 0, sizeof(got));
    ULONG len = sizeof(SOCKADDR_IN);
    expect(what, f(c, (PSOCKADDR)&got, &len), STATUS_BUFFER_TOO_SMALL);
    check("the size of a SOCKADDR_IN6 is asked for", len == sizeof(SOCKADDR_IN6));
    len = sizeof(got);
    expect(what, f(c, (PSOCKADDR)&got, &len), STATUS_SUCCESS);
    return check_address6(what, &got, len, last);
}

int main(void)
{
    NDK_ADAPTER *a = NULL, *b = NULL;
    expect("open mem:lab/[fd00::1]", RsNdkOpenAdapterEx("mem:lab/[fd00::1]", 2, 1, &a),
           STATUS_SUCCESS);
    expect("open mem:lab/[fd00::2]", RsNdkOpenAdapterEx("mem:lab/[fd00::2]", 2, 1, &b),
           STATUS_SUCCESS);
    if (a == NULL || b == NULL) {
        printf("%d failures\n", failures);
        return 1;
    }
    NDK_PD *pd_a = create_pd(a), *pd_b = create_pd(b);
    NDK_CQ *cq_a = create_cq(a), *cq_b = create_cq(b);
    NDK_QP *qa = create_qp(pd_a, cq_a, cq_a), *qb = create_qp(pd_b, cq_b, cq_b);

    /* B listens on its own IPv6 address; an IPv4 address is refused. */
    struct event listened = {0};
    NDK_LISTENER *listener = NULL;
    expect("create listener",
           b->Dispatch->NdkCreateListener(b, on_connect, &listened, NULL, NULL, &listener),
           STATUS_SUCCESS);
    SOCKADDR_IN v4;
    memset(&v4, 0, sizeof(v4));
    v4.sin_family = RSNDK_AF_INET;
    v4.sin_port = network_order(7006);
    expect("an IPv4 address on an IPv6 adapter",
           listener->Dispatch->NdkListen(listener, (PSOCKADDR)&v4, sizeof(v4), NULL, NULL),
           STATUS_INVALID_ADDRESS);
    SOCKADDR_IN6 at = address6(2, 7006), from = address6(1, 0);
    expect("listen on [fd00::2]:7006",
           listener->Dispatch->NdkListen(listener, (PSOCKADDR)&at, sizeof(at), NULL, NULL),
           STATUS_SUCCESS);
    SOCKADDR_IN6 bound;
    ULONG bound_len = sizeof(bound);
    expect("listener address",
           listener->Dispatch->NdkGetLocalAddress(listener, (PSOCKADDR)&bound, &bound_len),
           STATUS_SUCCESS);
    check("the listener's port", check_address6("listener address", &bound, bound_len, 2) == 7006);

    /* A connects from [fd00::1]:0 (a port of its choosing). */
    NDK_CONNECTOR *active = NULL;
    expect("create connector", a->Dispatch->NdkCreateConnector(a, NULL, NULL, &active),
           STATUS_SUCCESS);
    struct event connected = {0}, accepted = {0}, active_disc = {0}, passive_disc = {0};
    char hello[] = "hello over IPv6", welcome[] = "welcome";
    expect("connect",
           active->Dispatch->NdkConnect(active, qa, (PSOCKADDR)&from, sizeof(from),
                                        (PSOCKADDR)&at, sizeof(at), 4, 4, hello,
                                        (ULONG)sizeof(hello), on_request, &connected),
           STATUS_PENDING);
    wait_for(&listened, "the connect event");
    NDK_CONNECTOR *passive = listened.object;
    if (passive == NULL) {
        printf("%d failures\n", failures);
        return 1;
    }
    char data[64];
    ULONG ird = 0, ord = 0, data_len = sizeof(data);
    expect("connection data",
           passive->Dispatch->NdkGetConnectionData(passive, &ird, &ord, data, &data_len),
           STATUS_SUCCESS);
    check("the initiator's private data", memcmp(data, hello, sizeof(hello)) == 0);
    expect("accept",
           passive->Dispatch->NdkAccept(passive, qb, 4, 4, welcome, (ULONG)sizeof(welcome),
                                        on_disconnect, &passive_disc, on_request, &accepted),
           STATUS_PENDING);
    wait_for(&connected, "the connect");
    expect("connect completes", connected.status, STATUS_SUCCESS);
    expect("complete connect",
           active->Dispatch->NdkCompleteConnect(active, on_disconnect, &active_disc, NULL, NULL),
           STATUS_SUCCESS);
    wait_for(&accepted, "the accept");
    expect("accept completes", accepted.status, STATUS_SUCCESS);

    /* AF_INET6 addresses back, each end's view matching the other's. */
    USHORT a_port = connector_address(active->Dispatch->NdkGetLocalAddress, active,
                                      "active local address", 1);
    check("an ephemeral port", a_port >= 49152);
    check("the active side's peer is the listener",
          connector_address(active->Dispatch->NdkGetPeerAddress, active,
                            "active peer address", 2) == 7006);
    check("the passive side's local end is the listener's",
          connector_address(passive->Dispatch->NdkGetLocalAddress, passive,
                            "passive local address", 2) == 7006);
    check("the passive side's peer is the active side",
          connector_address(passive->Dispatch->NdkGetPeerAddress, passive,
                            "passive peer address", 1) == a_port);

    /* SEND from A to B. */
    unsigned char *a_buf = aligned_alloc(PAGE_SIZE, PAGE_SIZE);
    unsigned char *b_buf = aligned_alloc(PAGE_SIZE, PAGE_SIZE);
    unsigned char *target = aligned_alloc(PAGE_SIZE, 2 * PAGE_SIZE);
    if (a_buf == NULL || b_buf == NULL || target == NULL) {
        printf("FAIL memory\n%d failures\n", failures + 1);
        return 1;
    }
    memset(a_buf, 0, PAGE_SIZE);
    memset(b_buf, 0, PAGE_SIZE);
    for (int i = 0; i < 2 * PAGE_SIZE; i++)
        target[i] = (unsigned char)(i * 7 + 3);
    UINT32 a_token = privileged_token(pd_a), b_token = privileged_token(pd_b);
    const char message[] = "a SEND carried by RoCEv2 over IPv6";
    memcpy(a_buf, message, sizeof(message));
    NDK_SGE recv_sge = {.VirtualAddress = b_buf, .Length = PAGE_SIZE,
                        .MemoryRegionToken = b_token};
    expect("receive", qb->Dispatch->NdkReceive(qb, (PVOID)0xB1, &recv_sge, 1), STATUS_SUCCESS);
    NDK_SGE send_sge = {.VirtualAddress = a_buf, .Length = (ULONG)sizeof(message),
                        .MemoryRegionToken = a_token};
    expect("send", qa->Dispatch->NdkSend(qa, (PVOID)0xA1, &send_sge, 1, 0), STATUS_SUCCESS);
    NDK_RESULT_EX r = next_result(cq_a, "the send");
    expect("send completes", r.Status, STATUS_SUCCESS);
    check("the send's context", r.RequestContext == (PVOID)0xA1);
    r = next_result(cq_b, "the receive");
    expect("receive completes", r.Status, STATUS_SUCCESS);
    check("the receive's context and length",
          r.RequestContext == (PVOID)0xB1 && r.BytesTransferred == sizeof(message));
    check("the message arrived", memcmp(b_buf, message, sizeof(message)) == 0);

    /* RDMA READ by A of 6000 bytes of B's registered region (two pages,
     * several packets at the default path MTU). */
    MDL *mdl = RsNdkAllocateMdl(target, 2 * PAGE_SIZE);
    check("mdl", mdl != NULL);
    NDK_MR *mr = NULL;
    expect("create mr", pd_b->Dispatch->NdkCreateMr(pd_b, FALSE, NULL, NULL, &mr),
           STATUS_SUCCESS);
    struct event registered = {0};
    expect("register mr",
           finish(mr->Dispatch->NdkRegisterMr(
                      mr, mdl, 2 * PAGE_SIZE,
                      NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ, on_request,
                      &registered),
                  &registered, "the registration"),
           STATUS_SUCCESS);
    UINT32 remote_token = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    unsigned char *sink = malloc(6000);
    if (sink == NULL) {
        printf("FAIL memory\n%d failures\n", failures + 1);
        return 1;
    }
    memset(sink, 0, 6000);
    NDK_SGE read_sge = {.VirtualAddress = sink, .Length = 6000, .MemoryRegionToken = a_token};
    UINT64 remote = (UINT64)(uintptr_t)target + 100;
    expect("read", qa->Dispatch->NdkRead(qa, (PVOID)0xA2, &read_sge, 1, remote, remote_token, 0),
           STATUS_SUCCESS);
    r = next_result(cq_a, "the read");
    expect("read completes", r.Status, STATUS_SUCCESS);
    check("the read's context and length",
          r.RequestContext == (PVOID)0xA2 && r.BytesTransferred == 6000);
    check("the read data", memcmp(sink, target + 100, 6000) == 0);

    /* A leaves; B hears it once. */
    struct event disconnected = {0};
    expect("disconnect",
           finish(active->Dispatch->NdkDisconnect(active, on_request, &disconnected),
                  &disconnected, "the disconnect"),
           STATUS_SUCCESS);
    wait_for(&passive_disc, "the peer's disconnect event");
    check("one disconnect event", atomic_load(&passive_disc.done) == 1);
    check("none for our own disconnect", atomic_load(&active_disc.done) == 0);

    close_object(mr, "close mr");
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
    free(sink);
    free(target);
    free(a_buf);
    free(b_buf);
    printf("%d failures\n", failures);
    return failures != 0;
}
