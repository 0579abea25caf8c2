/* A C consumer of librsndk.so: proves the entry points are exported with C
 * linkage and behave as include/rsndk_host.h documents. Exit status 0 = pass;
 * otherwise it prints what failed. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "rsndk_host.h"

/* rsndk_host.h leaves MDL opaque (ndkpi.h defines it); this program does not
 * include ndkpi.h, so it completes the type with the Windows x64 layout the
 * header documents, checked against the offsets of ndkpi.h. */
struct _MDL {
    struct _MDL *Next;
    int16_t Size;
    int16_t MdlFlags;
    void *Process;
    void *MappedSystemVa;
    void *StartVa;
    uint32_t ByteCount;
    uint32_t ByteOffset;
};
_Static_assert(offsetof(MDL, Size) == 8, "MDL.Size");
_Static_assert(offsetof(MDL, MdlFlags) == 10, "MDL.MdlFlags");
_Static_assert(offsetof(MDL, Process) == 16, "MDL.Process");
_Static_assert(offsetof(MDL, MappedSystemVa) == 24, "MDL.MappedSystemVa");
_Static_assert(offsetof(MDL, StartVa) == 32, "MDL.StartVa");
_Static_assert(offsetof(MDL, ByteCount) == 40, "MDL.ByteCount");
_Static_assert(offsetof(MDL, ByteOffset) == 44, "MDL.ByteOffset");
_Static_assert(sizeof(MDL) == 48, "MDL size");

#define PAGE 4096u
#define MDL_PAGES_LOCKED 0x0002

static int failures;

static void expect(const char *what, NTSTATUS got, NTSTATUS want)
{
    if (got != want) {
        printf("FAIL %s: status 0x%08X, want 0x%08X\n", what, (unsigned)got, (unsigned)want);
        failures++;
    }
}

static void check(const char *what, int ok)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

/* An MDL over three pages starting 100 bytes into a page: one MDL (no chain)
 * listing the four pages the range touches, then freed. */
static void mdl_describes_a_buffer(void)
{
    unsigned char *buf = malloc(5 * PAGE);
    if (buf == NULL) {
        check("malloc", 0);
        return;
    }
    uintptr_t page0 = ((uintptr_t)buf + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    unsigned char *va = (unsigned char *)page0 + 100;
    size_t length = 3 * PAGE;
    MDL *mdl = RsNdkAllocateMdl(va, length);
    check("allocate mdl", mdl != NULL);
    if (mdl != NULL) {
        const uintptr_t *pfn = (const uintptr_t *)(mdl + 1);
        size_t pages = (100 + length + PAGE - 1) / PAGE;
        check("mdl Next", mdl->Next == NULL);
        check("mdl ByteCount", mdl->ByteCount == length);
        check("mdl ByteOffset", mdl->ByteOffset == 100);
        check("mdl StartVa", (uintptr_t)mdl->StartVa == page0);
        check("mdl MappedSystemVa", mdl->MappedSystemVa == va);
        check("mdl Size", (size_t)mdl->Size == sizeof(MDL) + pages * sizeof(uintptr_t));
        check("mdl pages locked", (mdl->MdlFlags & MDL_PAGES_LOCKED) != 0);
        for (size_t i = 0; i < pages; i++)
            check("mdl pfn", pfn[i] == (page0 >> 12) + i);
        RsNdkFreeMdl(mdl);
    }

    check("mdl NULL va", RsNdkAllocateMdl(NULL, PAGE) == NULL);
    check("mdl zero length", RsNdkAllocateMdl(va, 0) == NULL);
    check("mdl wrapping range", RsNdkAllocateMdl((void *)UINTPTR_MAX, 2) == NULL);
    RsNdkFreeMdl(NULL);
    free(buf);
}

int main(void)
{
    NDK_ADAPTER *sentinel = (NDK_ADAPTER *)0x1000;
    NDK_ADAPTER *adapter = sentinel;

    expect("bad address", RsNdkOpenAdapter("300.1.1.1", &adapter), RSNDK_STATUS_INVALID_PARAMETER);
    expect("unknown option", RsNdkOpenAdapter("127.0.0.1,foo=1", &adapter), RSNDK_STATUS_INVALID_PARAMETER);
    expect("null config", RsNdkOpenAdapter(NULL, &adapter), RSNDK_STATUS_INVALID_PARAMETER);
    expect("null out", RsNdkOpenAdapter("127.0.0.1", NULL), RSNDK_STATUS_INVALID_PARAMETER);
    expect("close null", RsNdkCloseAdapter(NULL), RSNDK_STATUS_INVALID_PARAMETER);
    expect("bad version", RsNdkOpenAdapterEx("mem:ctest/127.0.2.1", 3, 0, &adapter), RSNDK_NDIS_STATUS_BAD_VERSION);
    if (adapter != sentinel) {
        printf("FAIL: a refused open wrote the out-pointer\n");
        failures++;
    }

    adapter = NULL;
    expect("open mem", RsNdkOpenAdapter("mem:ctest/127.0.2.1", &adapter), RSNDK_STATUS_SUCCESS);
    if (adapter == NULL) {
        printf("FAIL: open succeeded without an adapter\n");
        failures++;
    } else {
        expect("close", RsNdkCloseAdapter(adapter), RSNDK_STATUS_SUCCESS);
        expect("close twice", RsNdkCloseAdapter(adapter), RSNDK_STATUS_INVALID_PARAMETER);
    }

    mdl_describes_a_buffer();
    printf("%d failures\n", failures);
    return failures != 0;
}
