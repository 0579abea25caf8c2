/* What the C consumers of tests/c share: failure accounting, callback
 * recorders, bounded waits, and the NDK object helpers they all use.
 * Static inline, so each consumer compiles with the parts it uses. */
#ifndef RSNDK_TEST_CONSUMER_H
#define RSNDK_TEST_CONSUMER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ndkpi.h"

static int failures;

static inline void expect(const char *what, NTSTATUS got, NTSTATUS want)
{
    if (got != want) {
        printf("FAIL %s: status 0x%08X, want 0x%08X\n", what, (unsigned)got, (unsigned)want);
        failures++;
    }
}

static inline void check(const char *what, int ok)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

/* One callback's outcome. */
struct event {
    atomic_int done;
    NTSTATUS status;
    ULONG reason;
    void *object;
};

static inline void NDKAPI on_request(PVOID ctx, NTSTATUS status)
{
    struct event *e = ctx;
    e->status = status;
    atomic_store(&e->done, 1);
}

static inline void NDKAPI on_close(PVOID ctx)
{
    struct event *e = ctx;
    atomic_store(&e->done, 1);
}

static inline void NDKAPI on_connect(PVOID ctx, NDK_CONNECTOR *connector)
{
    struct event *e = ctx;
    e->object = connector;
    atomic_store(&e->done, 1);
}

static inline void NDKAPI on_disconnect_ex(PVOID ctx, ULONG reason)
{
    struct event *e = ctx;
    e->reason = reason;
    atomic_fetch_add(&e->done, 1);
}

static inline void NDKAPI on_disconnect(PVOID ctx)
{
    struct event *e = ctx;
    atomic_fetch_add(&e->done, 1);
}

static inline void NDKAPI on_cq(PVOID ctx, NTSTATUS status)
{
    (void)ctx;
    (void)status;
}

static inline void pause_briefly(void)
{
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
}

/* Waits (at most 10 s) for `e`; 0 if it never came. */
static inline int wait_for(struct event *e, const char *what)
{
    for (int i = 0; i < 100000; i++) {
        if (atomic_load(&e->done))
            return 1;
        pause_briefly();
    }
    printf("FAIL timed out waiting for %s\n", what);
    failures++;
    return 0;
}

/* Finishes a call that may pend: its status, or its callback's. */
static inline NTSTATUS finish(NTSTATUS st, struct event *e, const char *what)
{
    if (st != STATUS_PENDING)
        return st;
    wait_for(e, what);
    return e->status;
}

/* The next completion of `cq` (at most 10 s). */
static inline NDK_RESULT_EX next_result(NDK_CQ *cq, const char *what)
{
    NDK_RESULT_EX r;
    memset(&r, 0, sizeof(r));
    for (int i = 0; i < 100000; i++) {
        if (cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1) == 1)
            return r;
        pause_briefly();
    }
    printf("FAIL no completion for %s\n", what);
    failures++;
    r.Status = (NTSTATUS)0xFFFFFFFF;
    return r;
}

/* Closes any object through the close entry its table starts with. */
static inline void close_object(void *object, const char *what)
{
    NDK_OBJECT_HEADER *header = object;
    /* Every table starts with its close entry. */
    const NDK_FN_CLOSE_OBJECT *table = *(const NDK_FN_CLOSE_OBJECT *const *)(header + 1);
    struct event e = {0};
    NTSTATUS st = (*table)(header, on_close, &e);
    if (st == STATUS_PENDING)
        wait_for(&e, what);
    else
        expect(what, st, STATUS_SUCCESS);
}

static inline NDK_PD *create_pd(NDK_ADAPTER *adapter)
{
    NDK_PD *pd = NULL;
    expect("create pd", adapter->Dispatch->NdkCreatePd(adapter, NULL, NULL, &pd), STATUS_SUCCESS);
    return pd;
}

static inline NDK_CQ *create_cq(NDK_ADAPTER *adapter)
{
    NDK_CQ *cq = NULL;
    expect("create cq",
           adapter->Dispatch->NdkCreateCq(adapter, 64, on_cq, NULL, NULL, NULL, NULL, &cq),
           STATUS_SUCCESS);
    return cq;
}

static inline NDK_QP *create_qp(NDK_PD *pd, NDK_CQ *receive, NDK_CQ *initiator)
{
    NDK_QP *qp = NULL;
    expect("create qp",
           pd->Dispatch->NdkCreateQp(pd, receive, initiator, NULL, 16, 16, 1, 1, 0, NULL, NULL,
                                     &qp),
           STATUS_SUCCESS);
    return qp;
}

static inline UINT32 privileged_token(NDK_PD *pd)
{
    UINT32 token = 0;
    pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &token);
    return token;
}

#endif /* RSNDK_TEST_CONSUMER_H */
