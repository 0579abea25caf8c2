/* A C consumer that closes its adapters from an atexit handler, as a
 * program that keeps them for its whole life does. glibc's exit runs the
 * main thread's thread-local destructors before the atexit handlers, so the
 * library runs after its own thread-locals are gone; closing must still
 * work (each close STATUS_SUCCESS, a second one STATUS_INVALID_PARAMETER),
 * never abort. Exit status 0 and "0 failures" = pass. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "rsndk_host.h"

#define ADAPTERS 3

/* Two adapters of one in-memory fabric and one over UDP on a loopback
 * address no other test binds. */
static const char *const configs[ADAPTERS] = {
    "mem:atexit/127.0.7.1",
    "mem:atexit/127.0.7.2",
    "127.0.7.3",
};
static NDK_ADAPTER *adapters[ADAPTERS];
static int failures;

static void expect(const char *what, const char *config, NTSTATUS got, NTSTATUS want)
{
    if (got != want) {
        printf("FAIL %s %s: status 0x%08X, want 0x%08X\n", what, config, (unsigned)got,
               (unsigned)want);
        failures++;
    }
}

static void close_at_exit(void)
{
    for (int i = 0; i < ADAPTERS; i++) {
        if (adapters[i] == NULL)
            continue;
        expect("close at exit", configs[i], RsNdkCloseAdapter(adapters[i]), RSNDK_STATUS_SUCCESS);
        expect("close again at exit", configs[i], RsNdkCloseAdapter(adapters[i]),
               RSNDK_STATUS_INVALID_PARAMETER);
    }
    printf("%d failures\n", failures);
    fflush(stdout);
    /* The status main returned cannot change any more: report here. */
    if (failures != 0)
        _exit(1);
}

int main(void)
{
    if (atexit(close_at_exit) != 0) {
        printf("FAIL atexit\n");
        return 1;
    }
    for (int i = 0; i < ADAPTERS; i++)
        expect("open", configs[i], RsNdkOpenAdapter(configs[i], &adapters[i]), RSNDK_STATUS_SUCCESS);
    return 0;
}
