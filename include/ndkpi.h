/*
 * ndkpi.h - the NetworkDirect Kernel Provider Interface (NDKPI 2.1), x64,
 * for C consumers of rsndk on Linux (librsndk.so, opened with
 * rsndk_host.h).
 *
 * The same objects, dispatch tables, callbacks, records, flags and status
 * codes as the WDK's ndkpi.h and ndkinfo.h (with the few Windows base types
 * they use), so NDK consumer code compiles unchanged. Layouts are the
 * Windows x64 ones; every entry and callback uses the Microsoft x64 calling
 * convention (NDKAPI, which is __attribute__((ms_abi)) off Windows): the
 * dispatch tables of librsndk.so are binary-identical to the kernel
 * driver's. Declare your callbacks NDKAPI too.
 *
 * The block at the end is generated from the Rust mirror (crates/ndkpi): a
 * definition per status code and a _Static_assert per size, field offset
 * and constant, so these declarations cannot drift from what the provider
 * implements (tests/abi/c_abi.rs checks the block is current and compiles a
 * consumer against this header).
 *
 * Versions: a consumer opens an adapter at 1.x (served as 1.2) or 2.x
 * (served as 2.1). NDKPI 2.1 adds NdkCompleteConnectEx and NdkAcceptEx at
 * the end of NDK_CONNECTOR_DISPATCH (104 bytes; a 1.x consumer reads the
 * first NDK_CONNECTOR_DISPATCH_1_SIZE = 88), their
 * NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, and NDK_RESULT_EX.ProviderErrorCode
 * (padding in 1.x). The provider's disconnect reasons and error codes are
 * in rsndk_host.h.
 */
#ifndef _NDKPI_H_
#define _NDKPI_H_
#define _NDKPI_

#if !defined(__x86_64__) && !defined(_M_X64)
#error "ndkpi.h describes the x64 NDK ABI"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The layout checks below use C11's _Static_assert. */
#if defined(__cplusplus) && !defined(_Static_assert)
#define _Static_assert static_assert
#endif

#if defined(_WIN32)
#define NDKAPI
#else
#define NDKAPI __attribute__((ms_abi))
#endif

/* ---- Windows base types (LLP64: long is 32 bits) ---- */

typedef int32_t NTSTATUS;
typedef int32_t NDIS_STATUS;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef uint16_t USHORT;
typedef uint8_t UCHAR;
typedef int8_t CHAR;
typedef int16_t CSHORT;
typedef uint8_t BOOLEAN;
typedef size_t SIZE_T;
typedef uintptr_t ULONG_PTR;
typedef void *PVOID;
typedef uint32_t UINT32;
typedef uint64_t UINT64;
typedef ULONG_PTR KAFFINITY;
typedef ULONG_PTR PFN_NUMBER;
typedef USHORT ADDRESS_FAMILY;

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

typedef union _LARGE_INTEGER {
    struct {
        ULONG LowPart;
        LONG HighPart;
    };
    struct {
        ULONG LowPart;
        LONG HighPart;
    } u;
    int64_t QuadPart;
} LARGE_INTEGER;
typedef LARGE_INTEGER PHYSICAL_ADDRESS;

typedef struct _GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;

typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT Group;
    USHORT Reserved[3];
} GROUP_AFFINITY;

/* Page size of the x64 kernel (the MDL and LAM granule). */
#define RSNDK_PAGE_SIZE 0x1000
#define RSNDK_PAGE_SHIFT 12
#ifndef PAGE_SIZE
#define PAGE_SIZE RSNDK_PAGE_SIZE
#endif
#ifndef PAGE_SHIFT
#define PAGE_SHIFT RSNDK_PAGE_SHIFT
#endif

/* ---- Winsock addresses (ws2def.h, ws2ipdef.h) ----
 * Winsock's address family numbers: AF_INET6 is 23 here, 10 in Linux's
 * <sys/socket.h>. NDK addresses carry Winsock's: use RSNDK_AF_INET6 where
 * the host's headers are also included (AF_INET6 is defined here only if
 * they are not). */
#define RSNDK_AF_INET 2
#define RSNDK_AF_INET6 23
#ifndef AF_INET
#define AF_INET RSNDK_AF_INET
#endif
#ifndef AF_INET6
#define AF_INET6 RSNDK_AF_INET6
#endif

typedef struct _RSNDK_SOCKADDR {
    ADDRESS_FAMILY sa_family;
    CHAR sa_data[14];
} SOCKADDR, *PSOCKADDR;

typedef struct _RSNDK_IN_ADDR {
    union {
        struct {
            UCHAR s_b1, s_b2, s_b3, s_b4;
        } S_un_b;
        struct {
            USHORT s_w1, s_w2;
        } S_un_w;
        ULONG S_addr;
    } S_un;
} IN_ADDR;

typedef struct _RSNDK_SOCKADDR_IN {
    ADDRESS_FAMILY sin_family;
    USHORT sin_port; /* network byte order */
    IN_ADDR sin_addr;
    CHAR sin_zero[8];
} SOCKADDR_IN;

typedef struct _RSNDK_IN6_ADDR {
    union {
        UCHAR Byte[16];
        USHORT Word[8];
    } u;
} IN6_ADDR;

typedef struct _RSNDK_SOCKADDR_IN6 {
    ADDRESS_FAMILY sin6_family;
    USHORT sin6_port; /* network byte order */
    ULONG sin6_flowinfo;
    IN6_ADDR sin6_addr;
    ULONG sin6_scope_id;
} SOCKADDR_IN6;

/* ---- MDL (wdm.h): a header followed by its PFN_NUMBER array ---- */

typedef struct _MDL {
    struct _MDL *Next;
    CSHORT Size;
    CSHORT MdlFlags;
    void *Process;
    PVOID MappedSystemVa;
    PVOID StartVa;
    ULONG ByteCount;
    ULONG ByteOffset;
} MDL;

#define MDL_MAPPED_TO_SYSTEM_VA 0x0001
#define MDL_PAGES_LOCKED 0x0002
#define MDL_SOURCE_IS_NONPAGED_POOL 0x0004
#define MDL_ALLOCATED_FIXED_SIZE 0x0008
#define MDL_PARTIAL 0x0010
#define MDL_PARTIAL_HAS_BEEN_MAPPED 0x0020
#define MDL_IO_PAGE_READ 0x0040
#define MDL_WRITE_OPERATION 0x0080
#define MDL_LOCKED_PAGE_TABLES 0x0100
#define MDL_PARENT_MAPPED_SYSTEM_VA MDL_LOCKED_PAGE_TABLES
#define MDL_FREE_EXTRA_PTES 0x0200
#define MDL_DESCRIBES_AWE 0x0400
#define MDL_IO_SPACE 0x0800
#define MDL_NETWORK_HEADER 0x1000
#define MDL_MAPPING_CAN_FAIL 0x2000
#define MDL_PAGE_CONTENTS_INVARIANT 0x4000
#define MDL_ALLOCATED_MUST_SUCCEED MDL_PAGE_CONTENTS_INVARIANT
#define MDL_INTERNAL 0x8000

/* ---- ndkinfo.h ---- */

typedef struct {
    USHORT Major;
    USHORT Minor;
} NDK_VERSION;

typedef enum _NDK_RDMA_TECHNOLOGY {
    NdkUndefined = 0,
    NdkiWarp = 1,
    NdkInfiniBand = 2,
    NdkRoCE = 3,
    NdkRoCEv2 = 4,
    NdkMaxTechnology = 5
} NDK_RDMA_TECHNOLOGY;

typedef struct _NDK_ADAPTER_INFO {
    NDK_VERSION Version;
    UINT32 VendorId;
    UINT32 DeviceId;
    SIZE_T MaxRegistrationSize;
    SIZE_T MaxWindowSize;
    ULONG FRMRPageCount;
    ULONG MaxInitiatorRequestSge;
    ULONG MaxReceiveRequestSge;
    ULONG MaxReadRequestSge;
    ULONG MaxTransferLength;
    ULONG MaxInlineDataSize;
    ULONG MaxInboundReadLimit;
    ULONG MaxOutboundReadLimit;
    ULONG MaxReceiveQueueDepth;
    ULONG MaxInitiatorQueueDepth;
    ULONG MaxSrqDepth;
    ULONG MaxCqDepth;
    ULONG LargeRequestThreshold;
    ULONG MaxCallerData;
    ULONG MaxCalleeData;
    ULONG AdapterFlags;
    NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;

#define NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED 0x00000001
#define NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED 0x00000002
#define NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED 0x00000004
#define NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED 0x00000008
#define NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED 0x00000010
#define NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED 0x00000100
#define NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED 0x00010000

/* ---- ndkpi.h: objects, records, common entries ---- */

typedef enum _NDK_OBJECT_TYPE {
    NdkObjectTypeUndefined = 0,
    NdkObjectTypeAdapter = 1,
    NdkObjectTypeQp = 2,
    NdkObjectTypeCq = 3,
    NdkObjectTypeMr = 4,
    NdkObjectTypeMw = 5,
    NdkObjectTypePd = 6,
    NdkObjectTypeSharedEndpoint = 7,
    NdkObjectTypeConnector = 8,
    NdkObjectTypeListener = 9,
    NdkObjectTypeSrq = 10,
    NdkObjectTypeMax = 11
} NDK_OBJECT_TYPE;

typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
    PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;

typedef struct _NDK_OBJECT_HEADER {
    NDK_VERSION Version;
    NDK_OBJECT_TYPE ObjectType;
    NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;

typedef struct _NDK_RESULT {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;
    PVOID RequestContext;
} NDK_RESULT;

typedef enum _NDK_OPERATION_TYPE {
    NdkOperationTypeReceive = 1,
    NdkOperationTypeReceiveAndInvalidate = 32769,
    NdkOperationTypeSend = 2,
    NdkOperationTypeFastRegister = 4,
    NdkOperationTypeBind = 8,
    NdkOperationTypeInvalidate = 16,
    NdkOperationTypeRead = 32,
    NdkOperationTypeWrite = 64
} NDK_OPERATION_TYPE;

typedef struct _NDK_RESULT_EX {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;
    PVOID RequestContext;
    NDK_OPERATION_TYPE Type;
    ULONG ProviderErrorCode; /* NDKPI 2.1; padding before */
    ULONG_PTR TypeSpecificCompletionOutput;
} NDK_RESULT_EX;

typedef PHYSICAL_ADDRESS NDK_LOGICAL_ADDRESS;

typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
    PVOID AdapterContext; /* the provider's */
    ULONG AdapterPageCount;
    NDK_LOGICAL_ADDRESS AdapterPageArray[1]; /* AdapterPageCount entries */
} NDK_LOGICAL_ADDRESS_MAPPING;

typedef struct _NDK_SGE {
    union {
        PVOID VirtualAddress;
        NDK_LOGICAL_ADDRESS LogicalAddress;
    };
    ULONG Length;
    UINT32 MemoryRegionToken;
} NDK_SGE;

typedef void(NDKAPI *NDK_FN_CLOSE_COMPLETION)(PVOID Context);
typedef void(NDKAPI *NDK_FN_REQUEST_COMPLETION)(PVOID Context, NTSTATUS Status);
typedef void(NDKAPI *NDK_FN_CREATE_COMPLETION)(PVOID Context, NTSTATUS Status,
                                               NDK_OBJECT_HEADER *pNdkObject);
typedef NTSTATUS(NDKAPI *NDK_FN_CLOSE_OBJECT)(NDK_OBJECT_HEADER *pNdkObject,
                                              NDK_FN_CLOSE_COMPLETION CloseCompletion,
                                              PVOID RequestContext);

typedef struct _NDK_EXTENSION_INTERFACE {
    const void *Dispatch;
} NDK_EXTENSION_INTERFACE;

typedef NTSTATUS(NDKAPI *NDK_FN_QUERY_EXTENSION_INTERFACE)(
    NDK_OBJECT_HEADER *pNdkObject, GUID *ExtensionInterfaceID,
    NDK_VERSION ExtensionInterfaceVersion, NDK_EXTENSION_INTERFACE *pExtensionInterface);

/* ---- CQ ---- */

typedef struct _NDK_CQ NDK_CQ;

typedef NTSTATUS(NDKAPI *NDK_FN_RESIZE_CQ)(NDK_CQ *pNdkCq, ULONG CqDepth,
                                           NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                           PVOID RequestContext);
typedef void(NDKAPI *NDK_FN_CQ_NOTIFICATION_CALLBACK)(PVOID CqNotificationContext,
                                                      NTSTATUS CqStatus);

#define NDK_CQ_NOTIFY_ERRORS 0
#define NDK_CQ_NOTIFY_ANY 1
#define NDK_CQ_NOTIFY_SOLICITED 2

typedef void(NDKAPI *NDK_FN_ARM_CQ)(NDK_CQ *pNdkCq, ULONG Type);
typedef ULONG(NDKAPI *NDK_FN_GET_CQ_RESULTS)(NDK_CQ *pNdkCq, NDK_RESULT Results[],
                                             ULONG nResults);
typedef NTSTATUS(NDKAPI *NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(NDK_CQ *pNdkCq,
                                                                 ULONG ModerationInterval,
                                                                 ULONG ModerationCount);
typedef ULONG(NDKAPI *NDK_FN_GET_CQ_RESULTS_EX)(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[],
                                                ULONG nResults);

typedef struct _NDK_CQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseCq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_RESIZE_CQ NdkResizeCq;
    NDK_FN_ARM_CQ NdkArmCq;
    NDK_FN_GET_CQ_RESULTS NdkGetCqResults;
    NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
    NDK_FN_GET_CQ_RESULTS_EX NdkGetCqResultsEx;
} NDK_CQ_DISPATCH;

struct _NDK_CQ {
    NDK_OBJECT_HEADER Header;
    const NDK_CQ_DISPATCH *Dispatch;
};

/* ---- MR ---- */

typedef struct _NDK_MR NDK_MR;

#define NDK_MR_FLAG_ALLOW_LOCAL_READ 0x00000000
#define NDK_MR_FLAG_ALLOW_LOCAL_WRITE 0x00000001
#define NDK_MR_FLAG_ALLOW_REMOTE_READ 0x00000002
#define NDK_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define NDK_MR_FLAG_RDMA_READ_SINK 0x00000008

typedef NTSTATUS(NDKAPI *NDK_FN_REGISTER_MR)(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length,
                                             ULONG Flags,
                                             NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                             PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_DEREGISTER_MR)(NDK_MR *pNdkMr,
                                               NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                               PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_INITIALIZE_FAST_REGISTER_MR)(
    NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef UINT32(NDKAPI *NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(NDK_MR *pNdkMr);
typedef UINT32(NDKAPI *NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

typedef struct _NDK_MR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMr;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_REGISTER_MR NdkRegisterMr;
    NDK_FN_DEREGISTER_MR NdkDeregisterMr;
    NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MR NdkGetRemoteTokenFromMr;
    NDK_FN_GET_LOCAL_TOKEN_FROM_MR NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;

struct _NDK_MR {
    NDK_OBJECT_HEADER Header;
    const NDK_MR_DISPATCH *Dispatch;
};

/* ---- MW ---- */

typedef struct _NDK_MW NDK_MW;

typedef UINT32(NDKAPI *NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(NDK_MW *pNdkMw);

typedef struct _NDK_MW_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMw;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;

struct _NDK_MW {
    NDK_OBJECT_HEADER Header;
    const NDK_MW_DISPATCH *Dispatch;
};

/* ---- SRQ ---- */

typedef struct _NDK_SRQ NDK_SRQ;

typedef NTSTATUS(NDKAPI *NDK_FN_MODIFY_SRQ)(NDK_SRQ *pNdkSrq, ULONG SrqDepth,
                                            ULONG NotifyThreshold,
                                            NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                            PVOID RequestContext);
typedef void(NDKAPI *NDK_FN_SRQ_NOTIFICATION_CALLBACK)(PVOID SrqNotificationContext,
                                                       NTSTATUS SrqStatus);
typedef NTSTATUS(NDKAPI *NDK_FN_SRQ_RECEIVE)(NDK_SRQ *pNdkSrq, PVOID RequestContext,
                                             const NDK_SGE *pSgl, ULONG nSge);

typedef struct _NDK_SRQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSrq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_MODIFY_SRQ NdkModifySrq;
    NDK_FN_SRQ_RECEIVE NdkSrqReceive;
} NDK_SRQ_DISPATCH;

struct _NDK_SRQ {
    NDK_OBJECT_HEADER Header;
    const NDK_SRQ_DISPATCH *Dispatch;
};

/* ---- QP ---- */

typedef struct _NDK_QP NDK_QP;

typedef void(NDKAPI *NDK_FN_FLUSH)(NDK_QP *pNdkQp);

#define NDK_OP_FLAG_SILENT_SUCCESS 0x00000001
#define NDK_OP_FLAG_READ_FENCE 0x00000002
#define NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT 0x00000004
#define NDK_OP_FLAG_ALLOW_REMOTE_READ 0x00000008
#define NDK_OP_FLAG_ALLOW_LOCAL_WRITE 0x00000010
#define NDK_OP_FLAG_ALLOW_REMOTE_WRITE 0x00000030
#define NDK_OP_FLAG_INLINE 0x00000040
#define NDK_OP_FLAG_RDMA_READ_SINK 0x00000080
#define NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE 0x00000100
#define NDK_OP_FLAG_DEFER 0x00000200

typedef NTSTATUS(NDKAPI *NDK_FN_SEND)(NDK_QP *pNdkQp, PVOID RequestContext,
                                      const NDK_SGE *pSgl, ULONG nSge, ULONG Flags);
typedef NTSTATUS(NDKAPI *NDK_FN_RECEIVE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                         const NDK_SGE *pSgl, ULONG nSge);
typedef NTSTATUS(NDKAPI *NDK_FN_BIND)(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
                                      NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
                                      ULONG Flags);
typedef NTSTATUS(NDKAPI *NDK_FN_FAST_REGISTER)(NDK_QP *pNdkQp, PVOID RequestContext,
                                               NDK_MR *pMr, ULONG AdapterPageCount,
                                               const NDK_LOGICAL_ADDRESS *AdapterPageArray,
                                               ULONG FBO, SIZE_T Length,
                                               PVOID BaseVirtualAddress, ULONG Flags);
typedef NTSTATUS(NDKAPI *NDK_FN_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                            NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags);
typedef NTSTATUS(NDKAPI *NDK_FN_READ)(NDK_QP *pNdkQp, PVOID RequestContext,
                                      const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
                                      UINT32 RemoteToken, ULONG Flags);
typedef NTSTATUS(NDKAPI *NDK_FN_WRITE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                       const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
                                       UINT32 RemoteToken, ULONG Flags);
typedef NTSTATUS(NDKAPI *NDK_FN_SEND_AND_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                                     const NDK_SGE *pSgl, ULONG nSge,
                                                     ULONG Flags, UINT32 RemoteToken);

typedef struct _NDK_QP_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseQp;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_FLUSH NdkFlush;
    NDK_FN_SEND NdkSend;
    NDK_FN_RECEIVE NdkReceive;
    NDK_FN_BIND NdkBind;
    NDK_FN_FAST_REGISTER NdkFastRegister;
    NDK_FN_INVALIDATE NdkInvalidate;
    NDK_FN_READ NdkRead;
    NDK_FN_WRITE NdkWrite;
    NDK_FN_SEND_AND_INVALIDATE NdkSendAndInvalidate;
} NDK_QP_DISPATCH;

struct _NDK_QP {
    NDK_OBJECT_HEADER Header;
    const NDK_QP_DISPATCH *Dispatch;
};

/* ---- PD ---- */

typedef struct _NDK_PD NDK_PD;

typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_MR)(NDK_PD *pNdkPd, BOOLEAN FastRegister,
                                           NDK_FN_CREATE_COMPLETION CreateCompletion,
                                           PVOID RequestContext, NDK_MR **ppNdkMr);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_MW)(NDK_PD *pNdkPd,
                                           NDK_FN_CREATE_COMPLETION CreateCompletion,
                                           PVOID RequestContext, NDK_MW **ppNdkMw);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_SRQ)(
    NDK_PD *pNdkPd, ULONG SrqDepth, ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
    NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification, PVOID SrqNotificationContext,
    GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_SRQ **ppNdkSrq);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_QP)(
    NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext,
    ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
    ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_QP **ppNdkQp);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_QP_WITH_SRQ)(
    NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq, PVOID QPContext,
    ULONG InitiatorQueueDepth, ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_QP **ppNdkQp);
typedef void(NDKAPI *NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(NDK_PD *pNdkPd,
                                                                 UINT32 *pToken);

typedef struct _NDK_PD_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkClosePd;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CREATE_MR NdkCreateMr;
    NDK_FN_CREATE_MW NdkCreateMw;
    NDK_FN_CREATE_SRQ NdkCreateSrq;
    NDK_FN_CREATE_QP NdkCreateQp;
    NDK_FN_CREATE_QP_WITH_SRQ NdkCreateQpWithSrq;
    NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;

struct _NDK_PD {
    NDK_OBJECT_HEADER Header;
    const NDK_PD_DISPATCH *Dispatch;
};

/* ---- shared endpoint ---- */

typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;

typedef NTSTATUS(NDKAPI *NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(
    NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, PSOCKADDR pAddress, ULONG *pAddressLength);

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSharedEndpoint;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;

struct _NDK_SHARED_ENDPOINT {
    NDK_OBJECT_HEADER Header;
    const NDK_SHARED_ENDPOINT_DISPATCH *Dispatch;
};

/* ---- connector (NDKPI 2.1 table) ---- */

typedef struct _NDK_CONNECTOR NDK_CONNECTOR;

typedef NTSTATUS(NDKAPI *NDK_FN_CONNECT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, const PSOCKADDR pSrcAddress,
    ULONG SrcAddressLength, const PSOCKADDR pDestAddress, ULONG DestAddressLength,
    ULONG InboundReadLimit, ULONG OutboundReadLimit, const PVOID pPrivateData,
    ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
    const PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef void(NDKAPI *NDK_FN_DISCONNECT_EVENT_CALLBACK)(PVOID DisconnectEventContext);
/* NDKPI 2.1: with the provider's reason (0: none given). */
typedef void(NDKAPI *NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(PVOID DisconnectEventContext,
                                                          ULONG ProviderDisconnectReason);
typedef NTSTATUS(NDKAPI *NDK_FN_COMPLETE_CONNECT)(
    NDK_CONNECTOR *pNdkConnector, NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
    PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion,
    PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_COMPLETE_CONNECT_EX)(
    NDK_CONNECTOR *pNdkConnector, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
    PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion,
    PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_ACCEPT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent, PVOID DisconnectEventContext,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_ACCEPT_EX)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent, PVOID DisconnectEventContext,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_REJECT)(NDK_CONNECTOR *pNdkConnector,
                                        const PVOID pPrivateData, ULONG PrivateDataLength);
typedef NTSTATUS(NDKAPI *NDK_FN_GET_CONNECTION_DATA)(NDK_CONNECTOR *pNdkConnector,
                                                     ULONG *pInboundReadLimit,
                                                     ULONG *pOutboundReadLimit,
                                                     PVOID pPrivateData,
                                                     ULONG *pPrivateDataLength);
typedef NTSTATUS(NDKAPI *NDK_FN_GET_LOCAL_ADDRESS)(NDK_CONNECTOR *pNdkConnector,
                                                   PSOCKADDR pAddress, ULONG *pAddressLength);
typedef NTSTATUS(NDKAPI *NDK_FN_GET_PEER_ADDRESS)(NDK_CONNECTOR *pNdkConnector,
                                                  PSOCKADDR pAddress, ULONG *pAddressLength);
typedef NTSTATUS(NDKAPI *NDK_FN_DISCONNECT)(NDK_CONNECTOR *pNdkConnector,
                                            NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                            PVOID RequestContext);
/* Declared by the header, in no table. */
typedef NTSTATUS(NDKAPI *NDK_FN_DISCONNECT_EX)(NDK_CONNECTOR *pNdkConnector, BOOLEAN Abortive,
                                               NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                               PVOID RequestContext);

typedef struct _NDK_CONNECTOR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseConnector;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CONNECT NdkConnect;
    NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
    NDK_FN_COMPLETE_CONNECT NdkCompleteConnect;
    NDK_FN_ACCEPT NdkAccept;
    NDK_FN_REJECT NdkReject;
    NDK_FN_GET_CONNECTION_DATA NdkGetConnectionData;
    NDK_FN_GET_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_GET_PEER_ADDRESS NdkGetPeerAddress;
    NDK_FN_DISCONNECT NdkDisconnect;
    /* NDKPI 2.1 (NULL in rsndk's table for a 1.x adapter): */
    NDK_FN_COMPLETE_CONNECT_EX NdkCompleteConnectEx;
    NDK_FN_ACCEPT_EX NdkAcceptEx;
} NDK_CONNECTOR_DISPATCH;

/* The bytes of NDK_CONNECTOR_DISPATCH a 1.x consumer reads (through
 * NdkDisconnect); ours, not the WDK's. */
#define NDK_CONNECTOR_DISPATCH_1_SIZE \
    (offsetof(NDK_CONNECTOR_DISPATCH, NdkDisconnect) + sizeof(NDK_FN_DISCONNECT))

struct _NDK_CONNECTOR {
    NDK_OBJECT_HEADER Header;
    const NDK_CONNECTOR_DISPATCH *Dispatch;
};

/* ---- listener ---- */

typedef struct _NDK_LISTENER NDK_LISTENER;

typedef void(NDKAPI *NDK_FN_CONNECT_EVENT_CALLBACK)(PVOID ConnectEventContext,
                                                    NDK_CONNECTOR *pNdkConnector);
typedef void(NDKAPI *NDK_FN_CONTROL_CONNECT_EVENTS)(NDK_LISTENER *pNdkListener,
                                                    BOOLEAN Pause);
typedef NTSTATUS(NDKAPI *NDK_FN_LISTEN)(NDK_LISTENER *pNdkListener, const PSOCKADDR pAddress,
                                        ULONG AddressLength,
                                        NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                        PVOID RequestContext);
typedef NTSTATUS(NDKAPI *NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(NDK_LISTENER *pNdkListener,
                                                            PSOCKADDR pAddress,
                                                            ULONG *pAddressLength);

typedef struct _NDK_LISTENER_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseListener;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_LISTEN NdkListen;
    NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_CONTROL_CONNECT_EVENTS NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;

struct _NDK_LISTENER {
    NDK_OBJECT_HEADER Header;
    const NDK_LISTENER_DISPATCH *Dispatch;
};

/* ---- adapter ---- */

typedef struct _NDK_ADAPTER NDK_ADAPTER;

typedef NTSTATUS(NDKAPI *NDK_FN_QUERY_ADAPTER_INFO)(NDK_ADAPTER *pNdkAdapter,
                                                    NDK_ADAPTER_INFO *pInfo,
                                                    ULONG *pBufferSize);
/* Declared by the header, in no table. */
typedef NTSTATUS(NDKAPI *NDK_FN_QUERY_ADAPTER_INFO_EX)(NDK_ADAPTER *pNdkAdapter,
                                                       NDK_VERSION Version,
                                                       NDK_ADAPTER_INFO *pInfo,
                                                       ULONG *pBufferSize);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_CQ)(
    NDK_ADAPTER *pNdkAdapter, ULONG CqDepth, NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
    PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_CQ **ppNdkCq);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_PD)(NDK_ADAPTER *pNdkAdapter,
                                           NDK_FN_CREATE_COMPLETION CreateCompletion,
                                           PVOID RequestContext, NDK_PD **ppNdkPd);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_SHARED_ENDPOINT)(
    NDK_ADAPTER *pNdkAdapter, const PSOCKADDR pAddress, ULONG AddressLength,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_CONNECTOR)(NDK_ADAPTER *pNdkAdapter,
                                                  NDK_FN_CREATE_COMPLETION CreateCompletion,
                                                  PVOID RequestContext,
                                                  NDK_CONNECTOR **ppNdkConnector);
typedef NTSTATUS(NDKAPI *NDK_FN_CREATE_LISTENER)(
    NDK_ADAPTER *pNdkAdapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
    PVOID ConnectEventContext, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_LISTENER **ppNdkListener);
typedef NTSTATUS(NDKAPI *NDK_FN_BUILD_LAM)(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
                                           NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                           PVOID RequestContext,
                                           NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
                                           ULONG *pLAMSize, ULONG *pFBO);
typedef void(NDKAPI *NDK_FN_RELEASE_LAM)(NDK_ADAPTER *pNdkAdapter,
                                         NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

typedef struct _NDK_ADAPTER_DISPATCH {
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_QUERY_ADAPTER_INFO NdkQueryAdapterInfo;
    NDK_FN_CREATE_CQ NdkCreateCq;
    NDK_FN_CREATE_PD NdkCreatePd;
    NDK_FN_CREATE_SHARED_ENDPOINT NdkCreateSharedEndpoint;
    NDK_FN_CREATE_CONNECTOR NdkCreateConnector;
    NDK_FN_CREATE_LISTENER NdkCreateListener;
    NDK_FN_BUILD_LAM NdkBuildLAM;
    NDK_FN_RELEASE_LAM NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;

struct _NDK_ADAPTER {
    NDK_OBJECT_HEADER Header;
    const NDK_ADAPTER_DISPATCH *Dispatch;
};

/* ---- status codes and layout checks ---- */

/* BEGIN GENERATED by `cargo run -q -p ndkpi --example layout -- --c`; do not edit. */
#define NDIS_STATUS_SUCCESS ((NTSTATUS)0x00000000L)
#define NDIS_STATUS_PENDING ((NTSTATUS)0x00000103L)
#define NDIS_STATUS_FAILURE ((NTSTATUS)0xC0000001L)
#define NDIS_STATUS_RESOURCES ((NTSTATUS)0xC000009AL)
#define NDIS_STATUS_NOT_SUPPORTED ((NTSTATUS)0xC00000BBL)
#define NDIS_STATUS_INVALID_PARAMETER ((NTSTATUS)0xC000000DL)
#define STATUS_SUCCESS ((NTSTATUS)0x00000000L)
#define STATUS_TIMEOUT ((NTSTATUS)0x00000102L)
#define STATUS_PENDING ((NTSTATUS)0x00000103L)
#define STATUS_BUFFER_OVERFLOW ((NTSTATUS)0x80000005L)
#define STATUS_UNSUCCESSFUL ((NTSTATUS)0xC0000001L)
#define STATUS_NOT_IMPLEMENTED ((NTSTATUS)0xC0000002L)
#define STATUS_ACCESS_VIOLATION ((NTSTATUS)0xC0000005L)
#define STATUS_INVALID_HANDLE ((NTSTATUS)0xC0000008L)
#define STATUS_INVALID_PARAMETER ((NTSTATUS)0xC000000DL)
#define STATUS_INVALID_DEVICE_REQUEST ((NTSTATUS)0xC0000010L)
#define STATUS_NO_MEMORY ((NTSTATUS)0xC0000017L)
#define STATUS_ACCESS_DENIED ((NTSTATUS)0xC0000022L)
#define STATUS_BUFFER_TOO_SMALL ((NTSTATUS)0xC0000023L)
#define STATUS_INVALID_PARAMETER_MIX ((NTSTATUS)0xC0000030L)
#define STATUS_DATA_OVERRUN ((NTSTATUS)0xC000003CL)
#define STATUS_DATA_ERROR ((NTSTATUS)0xC000003EL)
#define STATUS_SHARING_VIOLATION ((NTSTATUS)0xC0000043L)
#define STATUS_INSUFFICIENT_RESOURCES ((NTSTATUS)0xC000009AL)
#define STATUS_DEVICE_NOT_READY ((NTSTATUS)0xC00000A3L)
#define STATUS_IO_TIMEOUT ((NTSTATUS)0xC00000B5L)
#define STATUS_NOT_SUPPORTED ((NTSTATUS)0xC00000BBL)
#define STATUS_INTERNAL_ERROR ((NTSTATUS)0xC00000E5L)
#define STATUS_INVALID_PARAMETER_1 ((NTSTATUS)0xC00000EFL)
#define STATUS_INVALID_PARAMETER_2 ((NTSTATUS)0xC00000F0L)
#define STATUS_INVALID_PARAMETER_3 ((NTSTATUS)0xC00000F1L)
#define STATUS_INVALID_PARAMETER_4 ((NTSTATUS)0xC00000F2L)
#define STATUS_INVALID_PARAMETER_5 ((NTSTATUS)0xC00000F3L)
#define STATUS_INVALID_PARAMETER_6 ((NTSTATUS)0xC00000F4L)
#define STATUS_INVALID_PARAMETER_7 ((NTSTATUS)0xC00000F5L)
#define STATUS_INVALID_PARAMETER_8 ((NTSTATUS)0xC00000F6L)
#define STATUS_INVALID_PARAMETER_9 ((NTSTATUS)0xC00000F7L)
#define STATUS_INVALID_PARAMETER_10 ((NTSTATUS)0xC00000F8L)
#define STATUS_INVALID_PARAMETER_11 ((NTSTATUS)0xC00000F9L)
#define STATUS_INVALID_PARAMETER_12 ((NTSTATUS)0xC00000FAL)
#define STATUS_CANCELLED ((NTSTATUS)0xC0000120L)
#define STATUS_LOCAL_DISCONNECT ((NTSTATUS)0xC000013BL)
#define STATUS_REMOTE_DISCONNECT ((NTSTATUS)0xC000013CL)
#define STATUS_REMOTE_RESOURCES ((NTSTATUS)0xC000013DL)
#define STATUS_INVALID_ADDRESS ((NTSTATUS)0xC0000141L)
#define STATUS_INVALID_DEVICE_STATE ((NTSTATUS)0xC0000184L)
#define STATUS_INVALID_BUFFER_SIZE ((NTSTATUS)0xC0000206L)
#define STATUS_TOO_MANY_ADDRESSES ((NTSTATUS)0xC0000209L)
#define STATUS_ADDRESS_ALREADY_EXISTS ((NTSTATUS)0xC000020AL)
#define STATUS_ADDRESS_CLOSED ((NTSTATUS)0xC000020BL)
#define STATUS_CONNECTION_DISCONNECTED ((NTSTATUS)0xC000020CL)
#define STATUS_CONNECTION_RESET ((NTSTATUS)0xC000020DL)
#define STATUS_NOT_FOUND ((NTSTATUS)0xC0000225L)
#define STATUS_CONNECTION_REFUSED ((NTSTATUS)0xC0000236L)
#define STATUS_GRACEFUL_DISCONNECT ((NTSTATUS)0xC0000237L)
#define STATUS_CONNECTION_INVALID ((NTSTATUS)0xC000023AL)
#define STATUS_CONNECTION_ACTIVE ((NTSTATUS)0xC000023BL)
#define STATUS_NETWORK_UNREACHABLE ((NTSTATUS)0xC000023CL)
#define STATUS_HOST_UNREACHABLE ((NTSTATUS)0xC000023DL)
#define STATUS_PROTOCOL_UNREACHABLE ((NTSTATUS)0xC000023EL)
#define STATUS_PORT_UNREACHABLE ((NTSTATUS)0xC000023FL)
#define STATUS_REQUEST_ABORTED ((NTSTATUS)0xC0000240L)
#define STATUS_CONNECTION_ABORTED ((NTSTATUS)0xC0000241L)
#define STATUS_DEVICE_REMOVED ((NTSTATUS)0xC00002B6L)
#define STATUS_IMPLEMENTATION_LIMIT ((NTSTATUS)0xC000042BL)
#define NDIS_STATUS_BAD_VERSION ((NTSTATUS)0xC0010004L)
#define NDIS_STATUS_ADAPTER_NOT_READY ((NTSTATUS)0xC0010011L)
_Static_assert(sizeof(NDK_VERSION) == 4, "NDK_VERSION size");
_Static_assert(offsetof(NDK_VERSION, Major) == 0, "NDK_VERSION.Major");
_Static_assert(offsetof(NDK_VERSION, Minor) == 2, "NDK_VERSION.Minor");
_Static_assert(sizeof(NDK_ADAPTER_INFO) == 104, "NDK_ADAPTER_INFO size");
_Static_assert(offsetof(NDK_ADAPTER_INFO, Version) == 0, "NDK_ADAPTER_INFO.Version");
_Static_assert(offsetof(NDK_ADAPTER_INFO, VendorId) == 4, "NDK_ADAPTER_INFO.VendorId");
_Static_assert(offsetof(NDK_ADAPTER_INFO, DeviceId) == 8, "NDK_ADAPTER_INFO.DeviceId");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize) == 16, "NDK_ADAPTER_INFO.MaxRegistrationSize");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxWindowSize) == 24, "NDK_ADAPTER_INFO.MaxWindowSize");
_Static_assert(offsetof(NDK_ADAPTER_INFO, FRMRPageCount) == 32, "NDK_ADAPTER_INFO.FRMRPageCount");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxInitiatorRequestSge) == 36, "NDK_ADAPTER_INFO.MaxInitiatorRequestSge");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxReceiveRequestSge) == 40, "NDK_ADAPTER_INFO.MaxReceiveRequestSge");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxReadRequestSge) == 44, "NDK_ADAPTER_INFO.MaxReadRequestSge");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxTransferLength) == 48, "NDK_ADAPTER_INFO.MaxTransferLength");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxInlineDataSize) == 52, "NDK_ADAPTER_INFO.MaxInlineDataSize");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxInboundReadLimit) == 56, "NDK_ADAPTER_INFO.MaxInboundReadLimit");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxOutboundReadLimit) == 60, "NDK_ADAPTER_INFO.MaxOutboundReadLimit");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxReceiveQueueDepth) == 64, "NDK_ADAPTER_INFO.MaxReceiveQueueDepth");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxInitiatorQueueDepth) == 68, "NDK_ADAPTER_INFO.MaxInitiatorQueueDepth");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxSrqDepth) == 72, "NDK_ADAPTER_INFO.MaxSrqDepth");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxCqDepth) == 76, "NDK_ADAPTER_INFO.MaxCqDepth");
_Static_assert(offsetof(NDK_ADAPTER_INFO, LargeRequestThreshold) == 80, "NDK_ADAPTER_INFO.LargeRequestThreshold");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxCallerData) == 84, "NDK_ADAPTER_INFO.MaxCallerData");
_Static_assert(offsetof(NDK_ADAPTER_INFO, MaxCalleeData) == 88, "NDK_ADAPTER_INFO.MaxCalleeData");
_Static_assert(offsetof(NDK_ADAPTER_INFO, AdapterFlags) == 92, "NDK_ADAPTER_INFO.AdapterFlags");
_Static_assert(offsetof(NDK_ADAPTER_INFO, RdmaTechnology) == 96, "NDK_ADAPTER_INFO.RdmaTechnology");
_Static_assert(sizeof(NDK_OBJECT_HEADER_RESERVED_BLOCK) == 32, "NDK_OBJECT_HEADER_RESERVED_BLOCK size");
_Static_assert(offsetof(NDK_OBJECT_HEADER_RESERVED_BLOCK, rf) == 0, "NDK_OBJECT_HEADER_RESERVED_BLOCK.rf");
_Static_assert(sizeof(NDK_OBJECT_HEADER) == 40, "NDK_OBJECT_HEADER size");
_Static_assert(offsetof(NDK_OBJECT_HEADER, Version) == 0, "NDK_OBJECT_HEADER.Version");
_Static_assert(offsetof(NDK_OBJECT_HEADER, ObjectType) == 4, "NDK_OBJECT_HEADER.ObjectType");
_Static_assert(offsetof(NDK_OBJECT_HEADER, NdkReserved) == 8, "NDK_OBJECT_HEADER.NdkReserved");
_Static_assert(sizeof(NDK_RESULT) == 24, "NDK_RESULT size");
_Static_assert(offsetof(NDK_RESULT, Status) == 0, "NDK_RESULT.Status");
_Static_assert(offsetof(NDK_RESULT, BytesTransferred) == 4, "NDK_RESULT.BytesTransferred");
_Static_assert(offsetof(NDK_RESULT, QPContext) == 8, "NDK_RESULT.QPContext");
_Static_assert(offsetof(NDK_RESULT, RequestContext) == 16, "NDK_RESULT.RequestContext");
_Static_assert(sizeof(NDK_RESULT_EX) == 40, "NDK_RESULT_EX size");
_Static_assert(offsetof(NDK_RESULT_EX, Status) == 0, "NDK_RESULT_EX.Status");
_Static_assert(offsetof(NDK_RESULT_EX, BytesTransferred) == 4, "NDK_RESULT_EX.BytesTransferred");
_Static_assert(offsetof(NDK_RESULT_EX, QPContext) == 8, "NDK_RESULT_EX.QPContext");
_Static_assert(offsetof(NDK_RESULT_EX, RequestContext) == 16, "NDK_RESULT_EX.RequestContext");
_Static_assert(offsetof(NDK_RESULT_EX, Type) == 24, "NDK_RESULT_EX.Type");
_Static_assert(offsetof(NDK_RESULT_EX, ProviderErrorCode) == 28, "NDK_RESULT_EX.ProviderErrorCode");
_Static_assert(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 32, "NDK_RESULT_EX.TypeSpecificCompletionOutput");
_Static_assert(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) == 24, "NDK_LOGICAL_ADDRESS_MAPPING size");
_Static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterContext) == 0, "NDK_LOGICAL_ADDRESS_MAPPING.AdapterContext");
_Static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount) == 8, "NDK_LOGICAL_ADDRESS_MAPPING.AdapterPageCount");
_Static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) == 16, "NDK_LOGICAL_ADDRESS_MAPPING.AdapterPageArray");
_Static_assert(sizeof(NDK_SGE) == 16, "NDK_SGE size");
_Static_assert(offsetof(NDK_SGE, VirtualAddress) == 0, "NDK_SGE.VirtualAddress");
_Static_assert(offsetof(NDK_SGE, LogicalAddress) == 0, "NDK_SGE.LogicalAddress");
_Static_assert(offsetof(NDK_SGE, Length) == 8, "NDK_SGE.Length");
_Static_assert(offsetof(NDK_SGE, MemoryRegionToken) == 12, "NDK_SGE.MemoryRegionToken");
_Static_assert(sizeof(NDK_EXTENSION_INTERFACE) == 8, "NDK_EXTENSION_INTERFACE size");
_Static_assert(offsetof(NDK_EXTENSION_INTERFACE, Dispatch) == 0, "NDK_EXTENSION_INTERFACE.Dispatch");
_Static_assert(sizeof(NDK_CQ_DISPATCH) == 56, "NDK_CQ_DISPATCH size");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkCloseCq) == 0, "NDK_CQ_DISPATCH.NdkCloseCq");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkQueryExtension) == 8, "NDK_CQ_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkResizeCq) == 16, "NDK_CQ_DISPATCH.NdkResizeCq");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkArmCq) == 24, "NDK_CQ_DISPATCH.NdkArmCq");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkGetCqResults) == 32, "NDK_CQ_DISPATCH.NdkGetCqResults");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkControlCqInterruptModeration) == 40, "NDK_CQ_DISPATCH.NdkControlCqInterruptModeration");
_Static_assert(offsetof(NDK_CQ_DISPATCH, NdkGetCqResultsEx) == 48, "NDK_CQ_DISPATCH.NdkGetCqResultsEx");
_Static_assert(sizeof(NDK_CQ) == 48, "NDK_CQ size");
_Static_assert(offsetof(NDK_CQ, Header) == 0, "NDK_CQ.Header");
_Static_assert(offsetof(NDK_CQ, Dispatch) == 40, "NDK_CQ.Dispatch");
_Static_assert(sizeof(NDK_MR_DISPATCH) == 56, "NDK_MR_DISPATCH size");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkCloseMr) == 0, "NDK_MR_DISPATCH.NdkCloseMr");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkQueryExtension) == 8, "NDK_MR_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkRegisterMr) == 16, "NDK_MR_DISPATCH.NdkRegisterMr");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkDeregisterMr) == 24, "NDK_MR_DISPATCH.NdkDeregisterMr");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkInitializeFastRegisterMr) == 32, "NDK_MR_DISPATCH.NdkInitializeFastRegisterMr");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkGetRemoteTokenFromMr) == 40, "NDK_MR_DISPATCH.NdkGetRemoteTokenFromMr");
_Static_assert(offsetof(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr) == 48, "NDK_MR_DISPATCH.NdkGetLocalTokenFromMr");
_Static_assert(sizeof(NDK_MR) == 48, "NDK_MR size");
_Static_assert(offsetof(NDK_MR, Header) == 0, "NDK_MR.Header");
_Static_assert(offsetof(NDK_MR, Dispatch) == 40, "NDK_MR.Dispatch");
_Static_assert(sizeof(NDK_MW_DISPATCH) == 24, "NDK_MW_DISPATCH size");
_Static_assert(offsetof(NDK_MW_DISPATCH, NdkCloseMw) == 0, "NDK_MW_DISPATCH.NdkCloseMw");
_Static_assert(offsetof(NDK_MW_DISPATCH, NdkQueryExtension) == 8, "NDK_MW_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_MW_DISPATCH, NdkGetRemoteTokenFromMw) == 16, "NDK_MW_DISPATCH.NdkGetRemoteTokenFromMw");
_Static_assert(sizeof(NDK_MW) == 48, "NDK_MW size");
_Static_assert(offsetof(NDK_MW, Header) == 0, "NDK_MW.Header");
_Static_assert(offsetof(NDK_MW, Dispatch) == 40, "NDK_MW.Dispatch");
_Static_assert(sizeof(NDK_SRQ_DISPATCH) == 32, "NDK_SRQ_DISPATCH size");
_Static_assert(offsetof(NDK_SRQ_DISPATCH, NdkCloseSrq) == 0, "NDK_SRQ_DISPATCH.NdkCloseSrq");
_Static_assert(offsetof(NDK_SRQ_DISPATCH, NdkQueryExtension) == 8, "NDK_SRQ_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_SRQ_DISPATCH, NdkModifySrq) == 16, "NDK_SRQ_DISPATCH.NdkModifySrq");
_Static_assert(offsetof(NDK_SRQ_DISPATCH, NdkSrqReceive) == 24, "NDK_SRQ_DISPATCH.NdkSrqReceive");
_Static_assert(sizeof(NDK_SRQ) == 48, "NDK_SRQ size");
_Static_assert(offsetof(NDK_SRQ, Header) == 0, "NDK_SRQ.Header");
_Static_assert(offsetof(NDK_SRQ, Dispatch) == 40, "NDK_SRQ.Dispatch");
_Static_assert(sizeof(NDK_QP_DISPATCH) == 88, "NDK_QP_DISPATCH size");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkCloseQp) == 0, "NDK_QP_DISPATCH.NdkCloseQp");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkQueryExtension) == 8, "NDK_QP_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkFlush) == 16, "NDK_QP_DISPATCH.NdkFlush");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkSend) == 24, "NDK_QP_DISPATCH.NdkSend");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkReceive) == 32, "NDK_QP_DISPATCH.NdkReceive");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkBind) == 40, "NDK_QP_DISPATCH.NdkBind");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkFastRegister) == 48, "NDK_QP_DISPATCH.NdkFastRegister");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkInvalidate) == 56, "NDK_QP_DISPATCH.NdkInvalidate");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkRead) == 64, "NDK_QP_DISPATCH.NdkRead");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkWrite) == 72, "NDK_QP_DISPATCH.NdkWrite");
_Static_assert(offsetof(NDK_QP_DISPATCH, NdkSendAndInvalidate) == 80, "NDK_QP_DISPATCH.NdkSendAndInvalidate");
_Static_assert(sizeof(NDK_QP) == 48, "NDK_QP size");
_Static_assert(offsetof(NDK_QP, Header) == 0, "NDK_QP.Header");
_Static_assert(offsetof(NDK_QP, Dispatch) == 40, "NDK_QP.Dispatch");
_Static_assert(sizeof(NDK_PD_DISPATCH) == 64, "NDK_PD_DISPATCH size");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkClosePd) == 0, "NDK_PD_DISPATCH.NdkClosePd");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkQueryExtension) == 8, "NDK_PD_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkCreateMr) == 16, "NDK_PD_DISPATCH.NdkCreateMr");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkCreateMw) == 24, "NDK_PD_DISPATCH.NdkCreateMw");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkCreateSrq) == 32, "NDK_PD_DISPATCH.NdkCreateSrq");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkCreateQp) == 40, "NDK_PD_DISPATCH.NdkCreateQp");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkCreateQpWithSrq) == 48, "NDK_PD_DISPATCH.NdkCreateQpWithSrq");
_Static_assert(offsetof(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken) == 56, "NDK_PD_DISPATCH.NdkGetPrivilegedMemoryRegionToken");
_Static_assert(sizeof(NDK_PD) == 48, "NDK_PD size");
_Static_assert(offsetof(NDK_PD, Header) == 0, "NDK_PD.Header");
_Static_assert(offsetof(NDK_PD, Dispatch) == 40, "NDK_PD.Dispatch");
_Static_assert(sizeof(NDK_SHARED_ENDPOINT_DISPATCH) == 24, "NDK_SHARED_ENDPOINT_DISPATCH size");
_Static_assert(offsetof(NDK_SHARED_ENDPOINT_DISPATCH, NdkCloseSharedEndpoint) == 0, "NDK_SHARED_ENDPOINT_DISPATCH.NdkCloseSharedEndpoint");
_Static_assert(offsetof(NDK_SHARED_ENDPOINT_DISPATCH, NdkQueryExtension) == 8, "NDK_SHARED_ENDPOINT_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_SHARED_ENDPOINT_DISPATCH, NdkGetLocalAddress) == 16, "NDK_SHARED_ENDPOINT_DISPATCH.NdkGetLocalAddress");
_Static_assert(sizeof(NDK_SHARED_ENDPOINT) == 48, "NDK_SHARED_ENDPOINT size");
_Static_assert(offsetof(NDK_SHARED_ENDPOINT, Header) == 0, "NDK_SHARED_ENDPOINT.Header");
_Static_assert(offsetof(NDK_SHARED_ENDPOINT, Dispatch) == 40, "NDK_SHARED_ENDPOINT.Dispatch");
_Static_assert(sizeof(NDK_CONNECTOR_DISPATCH) == 104, "NDK_CONNECTOR_DISPATCH size");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkCloseConnector) == 0, "NDK_CONNECTOR_DISPATCH.NdkCloseConnector");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkQueryExtension) == 8, "NDK_CONNECTOR_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkConnect) == 16, "NDK_CONNECTOR_DISPATCH.NdkConnect");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint) == 24, "NDK_CONNECTOR_DISPATCH.NdkConnectWithSharedEndpoint");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect) == 32, "NDK_CONNECTOR_DISPATCH.NdkCompleteConnect");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkAccept) == 40, "NDK_CONNECTOR_DISPATCH.NdkAccept");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkReject) == 48, "NDK_CONNECTOR_DISPATCH.NdkReject");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData) == 56, "NDK_CONNECTOR_DISPATCH.NdkGetConnectionData");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress) == 64, "NDK_CONNECTOR_DISPATCH.NdkGetLocalAddress");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress) == 72, "NDK_CONNECTOR_DISPATCH.NdkGetPeerAddress");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkDisconnect) == 80, "NDK_CONNECTOR_DISPATCH.NdkDisconnect");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx) == 88, "NDK_CONNECTOR_DISPATCH.NdkCompleteConnectEx");
_Static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkAcceptEx) == 96, "NDK_CONNECTOR_DISPATCH.NdkAcceptEx");
_Static_assert(sizeof(NDK_CONNECTOR) == 48, "NDK_CONNECTOR size");
_Static_assert(offsetof(NDK_CONNECTOR, Header) == 0, "NDK_CONNECTOR.Header");
_Static_assert(offsetof(NDK_CONNECTOR, Dispatch) == 40, "NDK_CONNECTOR.Dispatch");
_Static_assert(sizeof(NDK_LISTENER_DISPATCH) == 40, "NDK_LISTENER_DISPATCH size");
_Static_assert(offsetof(NDK_LISTENER_DISPATCH, NdkCloseListener) == 0, "NDK_LISTENER_DISPATCH.NdkCloseListener");
_Static_assert(offsetof(NDK_LISTENER_DISPATCH, NdkQueryExtension) == 8, "NDK_LISTENER_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_LISTENER_DISPATCH, NdkListen) == 16, "NDK_LISTENER_DISPATCH.NdkListen");
_Static_assert(offsetof(NDK_LISTENER_DISPATCH, NdkGetLocalAddress) == 24, "NDK_LISTENER_DISPATCH.NdkGetLocalAddress");
_Static_assert(offsetof(NDK_LISTENER_DISPATCH, NdkControlConnectEvents) == 32, "NDK_LISTENER_DISPATCH.NdkControlConnectEvents");
_Static_assert(sizeof(NDK_LISTENER) == 48, "NDK_LISTENER size");
_Static_assert(offsetof(NDK_LISTENER, Header) == 0, "NDK_LISTENER.Header");
_Static_assert(offsetof(NDK_LISTENER, Dispatch) == 40, "NDK_LISTENER.Dispatch");
_Static_assert(sizeof(NDK_ADAPTER_DISPATCH) == 72, "NDK_ADAPTER_DISPATCH size");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkQueryExtension) == 0, "NDK_ADAPTER_DISPATCH.NdkQueryExtension");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo) == 8, "NDK_ADAPTER_DISPATCH.NdkQueryAdapterInfo");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateCq) == 16, "NDK_ADAPTER_DISPATCH.NdkCreateCq");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreatePd) == 24, "NDK_ADAPTER_DISPATCH.NdkCreatePd");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint) == 32, "NDK_ADAPTER_DISPATCH.NdkCreateSharedEndpoint");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateConnector) == 40, "NDK_ADAPTER_DISPATCH.NdkCreateConnector");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateListener) == 48, "NDK_ADAPTER_DISPATCH.NdkCreateListener");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkBuildLAM) == 56, "NDK_ADAPTER_DISPATCH.NdkBuildLAM");
_Static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkReleaseLAM) == 64, "NDK_ADAPTER_DISPATCH.NdkReleaseLAM");
_Static_assert(sizeof(NDK_ADAPTER) == 48, "NDK_ADAPTER size");
_Static_assert(offsetof(NDK_ADAPTER, Header) == 0, "NDK_ADAPTER.Header");
_Static_assert(offsetof(NDK_ADAPTER, Dispatch) == 40, "NDK_ADAPTER.Dispatch");
_Static_assert(sizeof(GUID) == 16, "GUID size");
_Static_assert(offsetof(GUID, Data1) == 0, "GUID.Data1");
_Static_assert(offsetof(GUID, Data2) == 4, "GUID.Data2");
_Static_assert(offsetof(GUID, Data3) == 6, "GUID.Data3");
_Static_assert(offsetof(GUID, Data4) == 8, "GUID.Data4");
_Static_assert(sizeof(GROUP_AFFINITY) == 16, "GROUP_AFFINITY size");
_Static_assert(offsetof(GROUP_AFFINITY, Mask) == 0, "GROUP_AFFINITY.Mask");
_Static_assert(offsetof(GROUP_AFFINITY, Group) == 8, "GROUP_AFFINITY.Group");
_Static_assert(offsetof(GROUP_AFFINITY, Reserved) == 10, "GROUP_AFFINITY.Reserved");
_Static_assert(sizeof(SOCKADDR) == 16, "SOCKADDR size");
_Static_assert(offsetof(SOCKADDR, sa_family) == 0, "SOCKADDR.sa_family");
_Static_assert(offsetof(SOCKADDR, sa_data) == 2, "SOCKADDR.sa_data");
_Static_assert(sizeof(IN_ADDR) == 4, "IN_ADDR size");
_Static_assert(offsetof(IN_ADDR, S_un) == 0, "IN_ADDR.S_un");
_Static_assert(sizeof(SOCKADDR_IN) == 16, "SOCKADDR_IN size");
_Static_assert(offsetof(SOCKADDR_IN, sin_family) == 0, "SOCKADDR_IN.sin_family");
_Static_assert(offsetof(SOCKADDR_IN, sin_port) == 2, "SOCKADDR_IN.sin_port");
_Static_assert(offsetof(SOCKADDR_IN, sin_addr) == 4, "SOCKADDR_IN.sin_addr");
_Static_assert(offsetof(SOCKADDR_IN, sin_zero) == 8, "SOCKADDR_IN.sin_zero");
_Static_assert(sizeof(IN6_ADDR) == 16, "IN6_ADDR size");
_Static_assert(offsetof(IN6_ADDR, u) == 0, "IN6_ADDR.u");
_Static_assert(sizeof(SOCKADDR_IN6) == 28, "SOCKADDR_IN6 size");
_Static_assert(offsetof(SOCKADDR_IN6, sin6_family) == 0, "SOCKADDR_IN6.sin6_family");
_Static_assert(offsetof(SOCKADDR_IN6, sin6_port) == 2, "SOCKADDR_IN6.sin6_port");
_Static_assert(offsetof(SOCKADDR_IN6, sin6_flowinfo) == 4, "SOCKADDR_IN6.sin6_flowinfo");
_Static_assert(offsetof(SOCKADDR_IN6, sin6_addr) == 8, "SOCKADDR_IN6.sin6_addr");
_Static_assert(offsetof(SOCKADDR_IN6, sin6_scope_id) == 24, "SOCKADDR_IN6.sin6_scope_id");
_Static_assert(sizeof(MDL) == 48, "MDL size");
_Static_assert(offsetof(MDL, Next) == 0, "MDL.Next");
_Static_assert(offsetof(MDL, Size) == 8, "MDL.Size");
_Static_assert(offsetof(MDL, MdlFlags) == 10, "MDL.MdlFlags");
_Static_assert(offsetof(MDL, Process) == 16, "MDL.Process");
_Static_assert(offsetof(MDL, MappedSystemVa) == 24, "MDL.MappedSystemVa");
_Static_assert(offsetof(MDL, StartVa) == 32, "MDL.StartVa");
_Static_assert(offsetof(MDL, ByteCount) == 40, "MDL.ByteCount");
_Static_assert(offsetof(MDL, ByteOffset) == 44, "MDL.ByteOffset");
_Static_assert((uint32_t)(NdkUndefined) == 0u, "NdkUndefined");
_Static_assert((uint32_t)(NdkiWarp) == 1u, "NdkiWarp");
_Static_assert((uint32_t)(NdkInfiniBand) == 2u, "NdkInfiniBand");
_Static_assert((uint32_t)(NdkRoCE) == 3u, "NdkRoCE");
_Static_assert((uint32_t)(NdkRoCEv2) == 4u, "NdkRoCEv2");
_Static_assert((uint32_t)(NdkMaxTechnology) == 5u, "NdkMaxTechnology");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED) == 1u, "NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED) == 2u, "NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED) == 4u, "NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED) == 8u, "NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED) == 16u, "NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED) == 256u, "NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED");
_Static_assert((uint32_t)(NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED) == 65536u, "NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED");
_Static_assert((uint32_t)(NdkObjectTypeUndefined) == 0u, "NdkObjectTypeUndefined");
_Static_assert((uint32_t)(NdkObjectTypeAdapter) == 1u, "NdkObjectTypeAdapter");
_Static_assert((uint32_t)(NdkObjectTypeQp) == 2u, "NdkObjectTypeQp");
_Static_assert((uint32_t)(NdkObjectTypeCq) == 3u, "NdkObjectTypeCq");
_Static_assert((uint32_t)(NdkObjectTypeMr) == 4u, "NdkObjectTypeMr");
_Static_assert((uint32_t)(NdkObjectTypeMw) == 5u, "NdkObjectTypeMw");
_Static_assert((uint32_t)(NdkObjectTypePd) == 6u, "NdkObjectTypePd");
_Static_assert((uint32_t)(NdkObjectTypeSharedEndpoint) == 7u, "NdkObjectTypeSharedEndpoint");
_Static_assert((uint32_t)(NdkObjectTypeConnector) == 8u, "NdkObjectTypeConnector");
_Static_assert((uint32_t)(NdkObjectTypeListener) == 9u, "NdkObjectTypeListener");
_Static_assert((uint32_t)(NdkObjectTypeSrq) == 10u, "NdkObjectTypeSrq");
_Static_assert((uint32_t)(NdkObjectTypeMax) == 11u, "NdkObjectTypeMax");
_Static_assert((uint32_t)(NdkOperationTypeReceive) == 1u, "NdkOperationTypeReceive");
_Static_assert((uint32_t)(NdkOperationTypeReceiveAndInvalidate) == 32769u, "NdkOperationTypeReceiveAndInvalidate");
_Static_assert((uint32_t)(NdkOperationTypeSend) == 2u, "NdkOperationTypeSend");
_Static_assert((uint32_t)(NdkOperationTypeFastRegister) == 4u, "NdkOperationTypeFastRegister");
_Static_assert((uint32_t)(NdkOperationTypeBind) == 8u, "NdkOperationTypeBind");
_Static_assert((uint32_t)(NdkOperationTypeInvalidate) == 16u, "NdkOperationTypeInvalidate");
_Static_assert((uint32_t)(NdkOperationTypeRead) == 32u, "NdkOperationTypeRead");
_Static_assert((uint32_t)(NdkOperationTypeWrite) == 64u, "NdkOperationTypeWrite");
_Static_assert((uint32_t)(NDK_CQ_NOTIFY_ERRORS) == 0u, "NDK_CQ_NOTIFY_ERRORS");
_Static_assert((uint32_t)(NDK_CQ_NOTIFY_ANY) == 1u, "NDK_CQ_NOTIFY_ANY");
_Static_assert((uint32_t)(NDK_CQ_NOTIFY_SOLICITED) == 2u, "NDK_CQ_NOTIFY_SOLICITED");
_Static_assert((uint32_t)(NDK_MR_FLAG_ALLOW_LOCAL_READ) == 0u, "NDK_MR_FLAG_ALLOW_LOCAL_READ");
_Static_assert((uint32_t)(NDK_MR_FLAG_ALLOW_LOCAL_WRITE) == 1u, "NDK_MR_FLAG_ALLOW_LOCAL_WRITE");
_Static_assert((uint32_t)(NDK_MR_FLAG_ALLOW_REMOTE_READ) == 2u, "NDK_MR_FLAG_ALLOW_REMOTE_READ");
_Static_assert((uint32_t)(NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == 5u, "NDK_MR_FLAG_ALLOW_REMOTE_WRITE");
_Static_assert((uint32_t)(NDK_MR_FLAG_RDMA_READ_SINK) == 8u, "NDK_MR_FLAG_RDMA_READ_SINK");
_Static_assert((uint32_t)(NDK_OP_FLAG_SILENT_SUCCESS) == 1u, "NDK_OP_FLAG_SILENT_SUCCESS");
_Static_assert((uint32_t)(NDK_OP_FLAG_READ_FENCE) == 2u, "NDK_OP_FLAG_READ_FENCE");
_Static_assert((uint32_t)(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) == 4u, "NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT");
_Static_assert((uint32_t)(NDK_OP_FLAG_ALLOW_REMOTE_READ) == 8u, "NDK_OP_FLAG_ALLOW_REMOTE_READ");
_Static_assert((uint32_t)(NDK_OP_FLAG_ALLOW_LOCAL_WRITE) == 16u, "NDK_OP_FLAG_ALLOW_LOCAL_WRITE");
_Static_assert((uint32_t)(NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == 48u, "NDK_OP_FLAG_ALLOW_REMOTE_WRITE");
_Static_assert((uint32_t)(NDK_OP_FLAG_INLINE) == 64u, "NDK_OP_FLAG_INLINE");
_Static_assert((uint32_t)(NDK_OP_FLAG_RDMA_READ_SINK) == 128u, "NDK_OP_FLAG_RDMA_READ_SINK");
_Static_assert((uint32_t)(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) == 256u, "NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE");
_Static_assert((uint32_t)(NDK_OP_FLAG_DEFER) == 512u, "NDK_OP_FLAG_DEFER");
_Static_assert((uint32_t)(RSNDK_PAGE_SHIFT) == 12u, "PAGE_SHIFT");
_Static_assert((uint32_t)(RSNDK_PAGE_SIZE) == 4096u, "PAGE_SIZE");
_Static_assert((uint32_t)(NDK_CONNECTOR_DISPATCH_1_SIZE) == 88u, "NDK_CONNECTOR_DISPATCH_1_SIZE");
_Static_assert((uint32_t)(NDIS_STATUS_SUCCESS) == 0u, "NDIS_STATUS_SUCCESS");
_Static_assert((uint32_t)(NDIS_STATUS_PENDING) == 259u, "NDIS_STATUS_PENDING");
_Static_assert((uint32_t)(NDIS_STATUS_FAILURE) == 3221225473u, "NDIS_STATUS_FAILURE");
_Static_assert((uint32_t)(NDIS_STATUS_RESOURCES) == 3221225626u, "NDIS_STATUS_RESOURCES");
_Static_assert((uint32_t)(NDIS_STATUS_NOT_SUPPORTED) == 3221225659u, "NDIS_STATUS_NOT_SUPPORTED");
_Static_assert((uint32_t)(NDIS_STATUS_INVALID_PARAMETER) == 3221225485u, "NDIS_STATUS_INVALID_PARAMETER");
_Static_assert((uint32_t)(RSNDK_AF_INET) == 2u, "AF_INET");
_Static_assert((uint32_t)(RSNDK_AF_INET6) == 23u, "AF_INET6");
_Static_assert((uint32_t)(MDL_MAPPED_TO_SYSTEM_VA) == 1u, "MDL_MAPPED_TO_SYSTEM_VA");
_Static_assert((uint32_t)(MDL_PAGES_LOCKED) == 2u, "MDL_PAGES_LOCKED");
_Static_assert((uint32_t)(MDL_SOURCE_IS_NONPAGED_POOL) == 4u, "MDL_SOURCE_IS_NONPAGED_POOL");
_Static_assert((uint32_t)(MDL_ALLOCATED_FIXED_SIZE) == 8u, "MDL_ALLOCATED_FIXED_SIZE");
_Static_assert((uint32_t)(MDL_PARTIAL) == 16u, "MDL_PARTIAL");
_Static_assert((uint32_t)(MDL_PARTIAL_HAS_BEEN_MAPPED) == 32u, "MDL_PARTIAL_HAS_BEEN_MAPPED");
_Static_assert((uint32_t)(MDL_IO_PAGE_READ) == 64u, "MDL_IO_PAGE_READ");
_Static_assert((uint32_t)(MDL_WRITE_OPERATION) == 128u, "MDL_WRITE_OPERATION");
_Static_assert((uint32_t)(MDL_LOCKED_PAGE_TABLES) == 256u, "MDL_LOCKED_PAGE_TABLES");
_Static_assert((uint32_t)(MDL_PARENT_MAPPED_SYSTEM_VA) == 256u, "MDL_PARENT_MAPPED_SYSTEM_VA");
_Static_assert((uint32_t)(MDL_FREE_EXTRA_PTES) == 512u, "MDL_FREE_EXTRA_PTES");
_Static_assert((uint32_t)(MDL_DESCRIBES_AWE) == 1024u, "MDL_DESCRIBES_AWE");
_Static_assert((uint32_t)(MDL_IO_SPACE) == 2048u, "MDL_IO_SPACE");
_Static_assert((uint32_t)(MDL_NETWORK_HEADER) == 4096u, "MDL_NETWORK_HEADER");
_Static_assert((uint32_t)(MDL_MAPPING_CAN_FAIL) == 8192u, "MDL_MAPPING_CAN_FAIL");
_Static_assert((uint32_t)(MDL_PAGE_CONTENTS_INVARIANT) == 16384u, "MDL_PAGE_CONTENTS_INVARIANT");
_Static_assert((uint32_t)(MDL_ALLOCATED_MUST_SUCCEED) == 16384u, "MDL_ALLOCATED_MUST_SUCCEED");
_Static_assert((uint32_t)(MDL_INTERNAL) == 32768u, "MDL_INTERNAL");
_Static_assert((uint32_t)(STATUS_SUCCESS) == 0u, "STATUS_SUCCESS");
_Static_assert((uint32_t)(STATUS_TIMEOUT) == 258u, "STATUS_TIMEOUT");
_Static_assert((uint32_t)(STATUS_PENDING) == 259u, "STATUS_PENDING");
_Static_assert((uint32_t)(STATUS_BUFFER_OVERFLOW) == 2147483653u, "STATUS_BUFFER_OVERFLOW");
_Static_assert((uint32_t)(STATUS_UNSUCCESSFUL) == 3221225473u, "STATUS_UNSUCCESSFUL");
_Static_assert((uint32_t)(STATUS_NOT_IMPLEMENTED) == 3221225474u, "STATUS_NOT_IMPLEMENTED");
_Static_assert((uint32_t)(STATUS_ACCESS_VIOLATION) == 3221225477u, "STATUS_ACCESS_VIOLATION");
_Static_assert((uint32_t)(STATUS_INVALID_HANDLE) == 3221225480u, "STATUS_INVALID_HANDLE");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER) == 3221225485u, "STATUS_INVALID_PARAMETER");
_Static_assert((uint32_t)(STATUS_INVALID_DEVICE_REQUEST) == 3221225488u, "STATUS_INVALID_DEVICE_REQUEST");
_Static_assert((uint32_t)(STATUS_NO_MEMORY) == 3221225495u, "STATUS_NO_MEMORY");
_Static_assert((uint32_t)(STATUS_ACCESS_DENIED) == 3221225506u, "STATUS_ACCESS_DENIED");
_Static_assert((uint32_t)(STATUS_BUFFER_TOO_SMALL) == 3221225507u, "STATUS_BUFFER_TOO_SMALL");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_MIX) == 3221225520u, "STATUS_INVALID_PARAMETER_MIX");
_Static_assert((uint32_t)(STATUS_DATA_OVERRUN) == 3221225532u, "STATUS_DATA_OVERRUN");
_Static_assert((uint32_t)(STATUS_DATA_ERROR) == 3221225534u, "STATUS_DATA_ERROR");
_Static_assert((uint32_t)(STATUS_SHARING_VIOLATION) == 3221225539u, "STATUS_SHARING_VIOLATION");
_Static_assert((uint32_t)(STATUS_INSUFFICIENT_RESOURCES) == 3221225626u, "STATUS_INSUFFICIENT_RESOURCES");
_Static_assert((uint32_t)(STATUS_DEVICE_NOT_READY) == 3221225635u, "STATUS_DEVICE_NOT_READY");
_Static_assert((uint32_t)(STATUS_IO_TIMEOUT) == 3221225653u, "STATUS_IO_TIMEOUT");
_Static_assert((uint32_t)(STATUS_NOT_SUPPORTED) == 3221225659u, "STATUS_NOT_SUPPORTED");
_Static_assert((uint32_t)(STATUS_INTERNAL_ERROR) == 3221225701u, "STATUS_INTERNAL_ERROR");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_1) == 3221225711u, "STATUS_INVALID_PARAMETER_1");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_2) == 3221225712u, "STATUS_INVALID_PARAMETER_2");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_3) == 3221225713u, "STATUS_INVALID_PARAMETER_3");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_4) == 3221225714u, "STATUS_INVALID_PARAMETER_4");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_5) == 3221225715u, "STATUS_INVALID_PARAMETER_5");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_6) == 3221225716u, "STATUS_INVALID_PARAMETER_6");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_7) == 3221225717u, "STATUS_INVALID_PARAMETER_7");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_8) == 3221225718u, "STATUS_INVALID_PARAMETER_8");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_9) == 3221225719u, "STATUS_INVALID_PARAMETER_9");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_10) == 3221225720u, "STATUS_INVALID_PARAMETER_10");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_11) == 3221225721u, "STATUS_INVALID_PARAMETER_11");
_Static_assert((uint32_t)(STATUS_INVALID_PARAMETER_12) == 3221225722u, "STATUS_INVALID_PARAMETER_12");
_Static_assert((uint32_t)(STATUS_CANCELLED) == 3221225760u, "STATUS_CANCELLED");
_Static_assert((uint32_t)(STATUS_LOCAL_DISCONNECT) == 3221225787u, "STATUS_LOCAL_DISCONNECT");
_Static_assert((uint32_t)(STATUS_REMOTE_DISCONNECT) == 3221225788u, "STATUS_REMOTE_DISCONNECT");
_Static_assert((uint32_t)(STATUS_REMOTE_RESOURCES) == 3221225789u, "STATUS_REMOTE_RESOURCES");
_Static_assert((uint32_t)(STATUS_INVALID_ADDRESS) == 3221225793u, "STATUS_INVALID_ADDRESS");
_Static_assert((uint32_t)(STATUS_INVALID_DEVICE_STATE) == 3221225860u, "STATUS_INVALID_DEVICE_STATE");
_Static_assert((uint32_t)(STATUS_INVALID_BUFFER_SIZE) == 3221225990u, "STATUS_INVALID_BUFFER_SIZE");
_Static_assert((uint32_t)(STATUS_TOO_MANY_ADDRESSES) == 3221225993u, "STATUS_TOO_MANY_ADDRESSES");
_Static_assert((uint32_t)(STATUS_ADDRESS_ALREADY_EXISTS) == 3221225994u, "STATUS_ADDRESS_ALREADY_EXISTS");
_Static_assert((uint32_t)(STATUS_ADDRESS_CLOSED) == 3221225995u, "STATUS_ADDRESS_CLOSED");
_Static_assert((uint32_t)(STATUS_CONNECTION_DISCONNECTED) == 3221225996u, "STATUS_CONNECTION_DISCONNECTED");
_Static_assert((uint32_t)(STATUS_CONNECTION_RESET) == 3221225997u, "STATUS_CONNECTION_RESET");
_Static_assert((uint32_t)(STATUS_NOT_FOUND) == 3221226021u, "STATUS_NOT_FOUND");
_Static_assert((uint32_t)(STATUS_CONNECTION_REFUSED) == 3221226038u, "STATUS_CONNECTION_REFUSED");
_Static_assert((uint32_t)(STATUS_GRACEFUL_DISCONNECT) == 3221226039u, "STATUS_GRACEFUL_DISCONNECT");
_Static_assert((uint32_t)(STATUS_CONNECTION_INVALID) == 3221226042u, "STATUS_CONNECTION_INVALID");
_Static_assert((uint32_t)(STATUS_CONNECTION_ACTIVE) == 3221226043u, "STATUS_CONNECTION_ACTIVE");
_Static_assert((uint32_t)(STATUS_NETWORK_UNREACHABLE) == 3221226044u, "STATUS_NETWORK_UNREACHABLE");
_Static_assert((uint32_t)(STATUS_HOST_UNREACHABLE) == 3221226045u, "STATUS_HOST_UNREACHABLE");
_Static_assert((uint32_t)(STATUS_PROTOCOL_UNREACHABLE) == 3221226046u, "STATUS_PROTOCOL_UNREACHABLE");
_Static_assert((uint32_t)(STATUS_PORT_UNREACHABLE) == 3221226047u, "STATUS_PORT_UNREACHABLE");
_Static_assert((uint32_t)(STATUS_REQUEST_ABORTED) == 3221226048u, "STATUS_REQUEST_ABORTED");
_Static_assert((uint32_t)(STATUS_CONNECTION_ABORTED) == 3221226049u, "STATUS_CONNECTION_ABORTED");
_Static_assert((uint32_t)(STATUS_DEVICE_REMOVED) == 3221226166u, "STATUS_DEVICE_REMOVED");
_Static_assert((uint32_t)(STATUS_IMPLEMENTATION_LIMIT) == 3221226539u, "STATUS_IMPLEMENTATION_LIMIT");
_Static_assert((uint32_t)(NDIS_STATUS_BAD_VERSION) == 3221291012u, "NDIS_STATUS_BAD_VERSION");
_Static_assert((uint32_t)(NDIS_STATUS_ADAPTER_NOT_READY) == 3221291025u, "NDIS_STATUS_ADAPTER_NOT_READY");
/* END GENERATED */

#ifdef __cplusplus
}
#endif

#endif /* _NDKPI_H_ */
