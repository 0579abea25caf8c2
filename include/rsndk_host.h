/*
 * rsndk_host.h - open rsndk software RNIC adapters from user space on Linux.
 *
 * Link with -lrsndk (librsndk.so, built by `cargo build` at the repository
 * root). After RsNdkOpenAdapter succeeds, the adapter is driven exactly as a
 * Windows kernel consumer drives an NDK provider: through the dispatch tables
 * of ndkpi.h (x64 layouts and the Microsoft x64 calling convention on Linux
 * too: a C consumer declares the table entries and its callbacks
 * __attribute__((ms_abi))). Include ndkpi.h before this header for the
 * full object and dispatch definitions (this repository's include/ndkpi.h:
 * NDKPI 2.1 for Linux consumers, checked against the provider's layouts;
 * the WDK's on Windows); this header alone only declares the adapter type.
 *
 * Configuration strings:
 *
 *   config    = transport *( "," option )
 *   transport = ADDR                  UDP: the adapter owns ADDR's port 4791
 *             | "udp:" ADDR           the same, spelled out
 *             | "mem:" NAME "/" ADDR  node ADDR on in-memory fabric NAME
 *   ADDR      = IPV4                  a.b.c.d
 *             | "[" IPV6 "]"          an IPv6 address, in brackets
 *   option    = "pmtu=" 256|512|1024|2048|4096    path MTU (default 1024)
 *             | "pcap=" PATH                      capture every packet
 *             | "loss=" P | "reorder=" P | "duplicate=" P  (mem only, 0..1)
 *             | "delay_us=" N | "seed=" N                 (mem only)
 *             | "busy_poll=" "on"|"off"   a thread polling an empty CQ runs
 *                                         the device itself (default on)
 *             | "ack_timeout=" 0..31      QPs retransmit after 4.096 us x 2^N
 *                                         (within 1 ms..2.1 s) instead of the
 *                                         negotiated timeout, as librdmacm's
 *                                         rdma_set_ack_timeout
 *
 *   e.g. "127.0.0.2", "udp:127.0.0.3,pmtu=4096", "mem:lab/192.0.2.1,loss=0.05",
 *        "mem:lab/[fd00::1]", "udp:[::1]"
 *
 * Addresses are unicast: not 0.0.0.0, broadcast or multicast (IPv4), not
 * [::], multicast or IPv4-mapped (IPv6; write an IPv4 adapter's address
 * in the IPv4 form). An adapter's family is its address's: an IPv6
 * adapter speaks RoCEv2 over IPv6 and takes SOCKADDR_IN6 addresses
 * (sin6_family AF_INET6, which is 23 as on Windows: RSNDK_AF_INET6 in
 * ndkpi.h) for its own address, and [::] to listen on any; it reports
 * SOCKADDR_IN6 addresses back. Other addresses are
 * STATUS_INVALID_ADDRESS (an IPv4 adapter refuses IPv6 addresses, but
 * takes [::] as "any" when listening, like a dual-stack socket). A UDP
 * adapter binds port 4791 of its address, so one process (or machine)
 * has one "udp:[::1]" adapter at a time: IPv6 has a single loopback
 * address, where IPv4 has 127.0.0.0/8.
 */
#ifndef RSNDK_HOST_H
#define RSNDK_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(_NDKPI_) && !defined(_NDKPI_H_)
typedef int32_t NTSTATUS;
typedef struct _NDK_ADAPTER NDK_ADAPTER;
typedef struct _MDL MDL;
#endif

#define RSNDK_STATUS_SUCCESS ((NTSTATUS)0x00000000L)
#define RSNDK_STATUS_INVALID_PARAMETER ((NTSTATUS)0xC000000DL)
#define RSNDK_STATUS_INSUFFICIENT_RESOURCES ((NTSTATUS)0xC000009AL)
#define RSNDK_STATUS_SHARING_VIOLATION ((NTSTATUS)0xC0000043L)
#define RSNDK_STATUS_ACCESS_DENIED ((NTSTATUS)0xC0000022L)
#define RSNDK_NDIS_STATUS_BAD_VERSION ((NTSTATUS)0xC0010004L)

/*
 * ProviderDisconnectReason of NDK_FN_DISCONNECT_EVENT_CALLBACK_EX (NDKPI 2.1;
 * the codes are rsndk's own, 0 is never reported):
 *   PEER             the peer ended the connection (its disconnect request,
 *                    or its connection manager gave the connection up)
 *   TRANSPORT_ERROR  the connection's QP had already failed (transport
 *                    retries exhausted, a remote access or operation error)
 *                    when the peer's end was reported
 */
#define RSNDK_DISCONNECT_REASON_PEER 1u
#define RSNDK_DISCONNECT_REASON_TRANSPORT_ERROR 2u

/*
 * NDK_RESULT_EX.ProviderErrorCode on a 2.1 adapter: 0 for success, else the
 * device's completion status, which tells apart what one NTSTATUS merges.
 */
#define RSNDK_ERROR_FLUSHED 1u
#define RSNDK_ERROR_LOCAL_LENGTH 2u
#define RSNDK_ERROR_LOCAL_PROTECTION 3u
#define RSNDK_ERROR_LOCAL_QP_OPERATION 4u
#define RSNDK_ERROR_REMOTE_ACCESS 5u
#define RSNDK_ERROR_REMOTE_INVALID_REQUEST 6u
#define RSNDK_ERROR_REMOTE_OPERATIONAL 7u
#define RSNDK_ERROR_RETRY_EXCEEDED 8u
#define RSNDK_ERROR_RNR_RETRY_EXCEEDED 9u
#define RSNDK_ERROR_MEMORY_MANAGEMENT 10u

/*
 * Opens one adapter described by `config`, for a consumer asking for NDK
 * version major.minor, and stores it in *adapter. The consumer names the
 * lowest minor it accepts; the adapter runs at the provider's highest minor
 * of that major (minors are supersets): 1.0 to 1.2 run at 1.2, 2.0 and 2.1 at
 * 2.1. A 2.1 adapter's connectors have the 13-entry connector table
 * (NdkCompleteConnectEx, NdkAcceptEx, whose extended disconnect callback gets
 * an RSNDK_DISCONNECT_REASON_*) and its NDK_RESULT_EX records carry a
 * ProviderErrorCode; a 1.x adapter is exactly the 1.2 interface (its
 * connector table's two 2.1 slots are NULL). Opening the same configuration again opens another
 * NDK_ADAPTER on the same software RNIC. On failure nothing is written:
 *   STATUS_INVALID_PARAMETER      config or adapter NULL, malformed config,
 *                                 pcap file cannot be created
 *   NDIS_STATUS_BAD_VERSION       unsupported version
 *   STATUS_SHARING_VIOLATION      the address is taken (UDP port 4791 owned by
 *                                 someone else, a device of this process with
 *                                 another configuration, a fabric node)
 *   STATUS_ACCESS_DENIED          an IPv4 UDP adapter in a process without
 *                                 CAP_NET_RAW: its raw sockets own the IPv4
 *                                 header the RoCEv2 ICRC covers (run as root,
 *                                 or `setcap cap_net_raw+ep` the program)
 *   STATUS_INSUFFICIENT_RESOURCES out of memory or threads
 */
NTSTATUS RsNdkOpenAdapterEx(const char *config, uint16_t major, uint16_t minor,
                            NDK_ADAPTER **adapter);

/* RsNdkOpenAdapterEx at version 1.2. */
NTSTATUS RsNdkOpenAdapter(const char *config, NDK_ADAPTER **adapter);

/*
 * Closes an adapter; returns when no callback into the consumer is running or
 * can still run. The device stops with its last adapter.
 * STATUS_INVALID_PARAMETER for NULL or a pointer that is not an open adapter.
 * May be called from an atexit handler (which glibc runs after the main
 * thread's thread-local destructors): the library does not need them to
 * close.
 */
NTSTATUS RsNdkCloseAdapter(NDK_ADAPTER *adapter);

/*
 * Describes `length` bytes at `va` with an MDL (the Windows x64 layout
 * followed by its PFN array; on Linux a PFN is the virtual page number), for
 * NdkRegisterMr and NdkBuildLAM. Long buffers get a chain linked through
 * Next. NULL for a NULL address, zero length, a wrapping range or no memory.
 * The memory must stay valid while the MDL or a registration from it is used.
 */
MDL *RsNdkAllocateMdl(void *va, size_t length);

/* Frees a chain from RsNdkAllocateMdl; NULL is ignored. */
void RsNdkFreeMdl(MDL *mdl);

#ifdef __cplusplus
}
#endif

#endif /* RSNDK_HOST_H */
