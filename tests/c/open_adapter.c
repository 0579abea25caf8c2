/* A C consumer of librsndk.so: proves the entry points are exported with C
 * linkage and behave as include/rsndk_host.h documents. Exit status 0 = pass;
 * otherwise it prints what failed. */
#include <stdio.h>
#include "rsndk_host.h"

static int failures;

static void expect(const char *what, NTSTATUS got, NTSTATUS want)
{
    if (got != want) {
        printf("FAIL %s: status 0x%08X, want 0x%08X\n", what, (unsigned)got, (unsigned)want);
        failures++;
    }
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
    printf("%d failures\n", failures);
    return failures != 0;
}
