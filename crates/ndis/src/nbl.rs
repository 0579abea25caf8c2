//! The NDIS 6 packet structures (`ndis/nbl.h`, `ndis/nblinfo.h`) and the
//! NET_BUFFER_LIST pool parameters (`ndis/nblapi.h`), declared in full for
//! x64 because the MUX driver builds, sends, receives and recycles them
//! and the kernel bottle allocates them as NDIS would.
//!
//! # Layout choices
//!
//! * Each structure opens with a C union of its link fields (`Next`,
//!   `FirstNetBuffer`, ...) and an `SLIST_HEADER Link` that only NDIS uses
//!   (to keep free lists inside its pools). The link fields are declared
//!   directly and the `SLIST_HEADER` view is represented by its effect, the
//!   16-byte alignment of the structure (and, in `NET_BUFFER`, a
//!   zero-sized field that ends the union at its size); the public fields
//!   keep their header offsets.
//! * `NET_BUFFER_LIST.Status` shares its four bytes with the NDIS-private
//!   `NdisReserved2`; it is declared as `Status`, like `NET_LUID` is
//!   declared as its `Value`.
//! * The unions whose every member is public are Rust unions:
//!   [`NET_BUFFER_DATA_LENGTH`] (`DataLength`/`stDataLength`) and
//!   [`NET_BUFFER_MEMORY_INFO`] (`SharedMemoryInfo`/`ScatterGatherList`).
//!   Reading `DataLength` goes through [`NET_BUFFER::data_length`] (safe).
//! * `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` on the reserved arrays
//!   is a zero-sized [`MEMORY_ALLOCATION_ALIGNED`] field before each.
//!
//! `NetBufferListInfo` has `MaxNetBufferListInfo` entries: 26 on x64 for
//! an NDIS 6.50 build (the contract this crate registers, see
//! [`crate::version`]); headers built for 6.80 and later add
//! `NetBufferListInfoReserved3` (27), and NDIS's own build adds private
//! entries after those. Lists only come from NDIS pools, which allocate
//! NDIS's larger size, so a 6.50 client reading its 26 entries stays
//! inside every list.

use core::fmt;
use core::ptr;

use ndkpi::{BOOLEAN, MDL, NDIS_STATUS, PVOID, UCHAR, ULONG, USHORT};

use crate::kernel::PHYSICAL_ADDRESS;
use crate::object::{NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT};
use crate::types::NDIS_HANDLE;

/// `MEMORY_ALLOCATION_ALIGNMENT` on x64 (`ntdef.h`; 8 on 32-bit targets).
pub const MEMORY_ALLOCATION_ALIGNMENT: usize = 16;

/// Zero-sized field that aligns the field after it (and the structure) to
/// `MEMORY_ALLOCATION_ALIGNMENT`, the `DECLSPEC_ALIGN` of the header.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MEMORY_ALLOCATION_ALIGNED(pub [u8; 0]);

const _: () = assert!(align_of::<MEMORY_ALLOCATION_ALIGNED>() == MEMORY_ALLOCATION_ALIGNMENT);

/// Opaque `SCATTER_GATHER_LIST` (`wdm.h`); a virtual adapter never maps
/// DMA.
#[repr(C)]
pub struct SCATTER_GATHER_LIST {
    _data: [u8; 0],
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

impl fmt::Debug for SCATTER_GATHER_LIST {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SCATTER_GATHER_LIST")
    }
}

// ---------------------------------------------------------------------
// NET_BUFFER (ndis/nbl.h:91).

/// One shared-memory segment of a `NET_BUFFER` (`ndis/nbl.h:76`, NDIS
/// 6.20 VM queues).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_BUFFER_SHARED_MEMORY {
    /// Next segment, or null.
    pub NextSharedMemorySegment: *mut NET_BUFFER_SHARED_MEMORY,
    /// Flags of the segment.
    pub SharedMemoryFlags: ULONG,
    /// Handle of the shared memory block.
    pub SharedMemoryHandle: NDIS_HANDLE,
    /// Offset of the segment in the block.
    pub SharedMemoryOffset: ULONG,
    /// Length of the segment.
    pub SharedMemoryLength: ULONG,
}

/// The data length of a `NET_BUFFER`: the header's anonymous union of a
/// `ULONG` and a `SIZE_T` (named `NET_BUFFER_DATA_LENGTH` under
/// `NDIS_INCLUDE_LEGACY_NAMES`, `ndis/nbl.h:33`). The `NET_BUFFER_DATA_LENGTH`
/// macro reads `DataLength`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union NET_BUFFER_DATA_LENGTH {
    /// The length as NDIS reads it.
    pub DataLength: ULONG,
    /// The same length, pointer-sized.
    pub stDataLength: usize,
}

impl From<ULONG> for NET_BUFFER_DATA_LENGTH {
    /// Both views equal `length` (the `SIZE_T` view is written).
    fn from(length: ULONG) -> Self {
        Self {
            stDataLength: length as usize,
        }
    }
}

impl fmt::Debug for NET_BUFFER_DATA_LENGTH {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NET_BUFFER_DATA_LENGTH")
            .finish_non_exhaustive()
    }
}

/// The header's anonymous union at the end of `NET_BUFFER` (NDIS 6.20):
/// shared-memory segments for VM queues or the scatter/gather list of a
/// DMA send.
#[repr(C)]
#[derive(Clone, Copy)]
pub union NET_BUFFER_MEMORY_INFO {
    /// VM-queue shared memory.
    pub SharedMemoryInfo: *mut NET_BUFFER_SHARED_MEMORY,
    /// Scatter/gather list.
    pub ScatterGatherList: *mut SCATTER_GATHER_LIST,
}

impl fmt::Debug for NET_BUFFER_MEMORY_INFO {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NET_BUFFER_MEMORY_INFO")
            .finish_non_exhaustive()
    }
}

/// One packet: a span of an MDL chain (`ndis/nbl.h:91`; 176 bytes on x64).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_BUFFER {
    /// Next `NET_BUFFER` of the same list (`NET_BUFFER_NEXT_NB`).
    pub Next: *mut NET_BUFFER,
    /// MDL holding the first data byte (`NET_BUFFER_CURRENT_MDL`).
    pub CurrentMdl: *mut MDL,
    /// Offset of the first data byte in `CurrentMdl`.
    pub CurrentMdlOffset: ULONG,
    /// Bytes of data (`NET_BUFFER_DATA_LENGTH`).
    pub NbDataLength: NET_BUFFER_DATA_LENGTH,
    /// First MDL of the chain (`NET_BUFFER_FIRST_MDL`).
    pub MdlChain: *mut MDL,
    /// Offset of the first data byte from the start of `MdlChain`.
    pub DataOffset: ULONG,
    /// Zero-sized: ends the header's leading union (the fields above and
    /// the NDIS-private `SLIST_HEADER Link`) at its pointer-aligned size.
    pub HeaderUnionEnd: [PVOID; 0],
    /// Checksum bias for the transport.
    pub ChecksumBias: USHORT,
    /// Reserved.
    pub Reserved: USHORT,
    /// Pool the buffer came from.
    pub NdisPoolHandle: NDIS_HANDLE,
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `NdisReserved`.
    pub NdisReservedAlign: MEMORY_ALLOCATION_ALIGNED,
    /// Owned by NDIS.
    pub NdisReserved: [PVOID; 2],
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `ProtocolReserved`.
    pub ProtocolReservedAlign: MEMORY_ALLOCATION_ALIGNED,
    /// Owned by the current protocol owner.
    pub ProtocolReserved: [PVOID; 6],
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `MiniportReserved`.
    pub MiniportReservedAlign: MEMORY_ALLOCATION_ALIGNED,
    /// Owned by the current miniport owner.
    pub MiniportReserved: [PVOID; 4],
    /// Physical address of the data, if the allocator set it.
    pub DataPhysicalAddress: PHYSICAL_ADDRESS,
    /// Shared memory or scatter/gather list.
    pub MemoryInfo: NET_BUFFER_MEMORY_INFO,
}

impl NET_BUFFER {
    /// A buffer of `length` bytes at `offset` into `mdl_chain`, whose
    /// current MDL is the first; everything else zero or null (what a
    /// pool allocation starts from).
    pub const fn new(mdl_chain: *mut MDL, offset: ULONG, length: ULONG) -> Self {
        Self {
            Next: ptr::null_mut(),
            CurrentMdl: mdl_chain,
            CurrentMdlOffset: offset,
            NbDataLength: NET_BUFFER_DATA_LENGTH {
                stDataLength: length as usize,
            },
            MdlChain: mdl_chain,
            DataOffset: offset,
            HeaderUnionEnd: [],
            ChecksumBias: 0,
            Reserved: 0,
            NdisPoolHandle: ptr::null_mut(),
            NdisReservedAlign: MEMORY_ALLOCATION_ALIGNED([]),
            NdisReserved: [ptr::null_mut(); 2],
            ProtocolReservedAlign: MEMORY_ALLOCATION_ALIGNED([]),
            ProtocolReserved: [ptr::null_mut(); 6],
            MiniportReservedAlign: MEMORY_ALLOCATION_ALIGNED([]),
            MiniportReserved: [ptr::null_mut(); 4],
            DataPhysicalAddress: 0,
            MemoryInfo: NET_BUFFER_MEMORY_INFO {
                SharedMemoryInfo: ptr::null_mut(),
            },
        }
    }

    /// `NET_BUFFER_DATA_LENGTH(nb)`: the `ULONG` member of the length
    /// union.
    #[allow(unsafe_code)]
    pub const fn data_length(&self) -> ULONG {
        // SAFETY: both members of the union are integers, so any
        // initialised low four bytes are a valid ULONG; they are
        // initialised whichever member was written last (`DataLength` is
        // the low half of `stDataLength` on little-endian x64), and a
        // `&NET_BUFFER` refers to an initialised structure.
        unsafe { self.NbDataLength.DataLength }
    }

    /// Sets both views of the length union to `length`.
    pub const fn set_data_length(&mut self, length: ULONG) {
        self.NbDataLength = NET_BUFFER_DATA_LENGTH {
            stDataLength: length as usize,
        };
    }
}

// ---------------------------------------------------------------------
// NET_BUFFER_LIST (ndis/nbl.h:171).

/// Context area of a list (`ndis/nbl.h:141`): a header followed by
/// `Size` bytes of `ContextData`, the used part starting at `Offset`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_BUFFER_LIST_CONTEXT {
    /// Next (outer) context block.
    pub Next: *mut NET_BUFFER_LIST_CONTEXT,
    /// Bytes of `ContextData`.
    pub Size: USHORT,
    /// Offset of the used part in `ContextData`.
    pub Offset: USHORT,
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `ContextData`.
    pub ContextDataAlign: MEMORY_ALLOCATION_ALIGNED,
    /// The flexible array `ContextData[]`.
    pub ContextData: [UCHAR; 0],
}

impl NET_BUFFER_LIST_CONTEXT {
    /// Byte offset from the start of this block to the used context data:
    /// what `NET_BUFFER_LIST_CONTEXT_DATA_START(nbl)` adds to `nbl->Context`
    /// (`ndis/nblaccessors.h:209`: past the header, plus `Offset`).
    pub const fn data_start_offset(&self) -> usize {
        size_of::<Self>() + self.Offset as usize
    }

    /// `NET_BUFFER_LIST_CONTEXT_DATA_SIZE(nbl)` (`ndis/nblaccessors.h:210`):
    /// the block's `Size`.
    pub const fn data_size(&self) -> usize {
        self.Size as usize
    }
}

/// Index into `NET_BUFFER_LIST.NetBufferListInfo` (`ndis/nblinfo.h:14`,
/// C enum `NDIS_NET_BUFFER_LIST_INFO`; x64 values).
pub type NDIS_NET_BUFFER_LIST_INFO = i32;
/// Checksum offload information.
pub const TcpIpChecksumNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 0;
/// IPsec offload (v1).
pub const IPsecOffloadV1NetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 1;
/// Large send offload information.
pub const TcpLargeSendNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 2;
/// Classification handle.
pub const ClassificationHandleNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 3;
/// 802.1Q priority and VLAN tag (`NDIS_NET_BUFFER_LIST_8021Q_INFO`).
pub const Ieee8021QNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 4;
/// Cancel identifier (`NDIS_SET_NET_BUFFER_LIST_CANCEL_ID`).
pub const NetBufferListCancelId: NDIS_NET_BUFFER_LIST_INFO = 5;
/// Media-specific information.
pub const MediaSpecificInformation: NDIS_NET_BUFFER_LIST_INFO = 6;
/// Frame type: the EtherType, in network byte order, on receive.
pub const NetBufferListFrameType: NDIS_NET_BUFFER_LIST_INFO = 7;
/// Protocol ID (same slot as the frame type, on send).
pub const NetBufferListProtocolId: NDIS_NET_BUFFER_LIST_INFO = 7;
/// RSS hash value.
pub const NetBufferListHashValue: NDIS_NET_BUFFER_LIST_INFO = 8;
/// RSS hash type and function.
pub const NetBufferListHashInfo: NDIS_NET_BUFFER_LIST_INFO = 9;
/// WFP information.
pub const WfpNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 10;
/// IPsec offload v2 tunnel information.
pub const IPsecOffloadV2TunnelNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 11;
/// IPsec offload v2 header information.
pub const IPsecOffloadV2HeaderNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 12;
/// Correlation identifier.
pub const NetBufferListCorrelationId: NDIS_NET_BUFFER_LIST_INFO = 13;
/// Receive filtering information.
pub const NetBufferListFilteringInfo: NDIS_NET_BUFFER_LIST_INFO = 14;
/// Extended media-specific information.
pub const MediaSpecificInformationEx: NDIS_NET_BUFFER_LIST_INFO = 15;
/// Original interface index.
pub const NblOriginalInterfaceIfIndex: NDIS_NET_BUFFER_LIST_INFO = 16;
/// TCP receive bytes transferred.
pub const TcpReceiveBytesTransferred: NDIS_NET_BUFFER_LIST_INFO = 17;
/// Hyper-V switch forwarding (reserved).
pub const SwitchForwardingReserved: NDIS_NET_BUFFER_LIST_INFO = 18;
/// Hyper-V switch forwarding detail.
pub const SwitchForwardingDetail: NDIS_NET_BUFFER_LIST_INFO = 19;
/// Virtual subnet information.
pub const VirtualSubnetInfo: NDIS_NET_BUFFER_LIST_INFO = 20;
/// Reserved for intermediate drivers.
pub const IMReserved: NDIS_NET_BUFFER_LIST_INFO = 21;
/// Receive segment coalescing information.
pub const TcpRecvSegCoalesceInfo: NDIS_NET_BUFFER_LIST_INFO = 22;
/// RSC TCP timestamp delta.
pub const RscTcpTimestampDelta: NDIS_NET_BUFFER_LIST_INFO = 23;
/// GFT offload information (NDIS 6.50).
pub const GftOffloadInformation: NDIS_NET_BUFFER_LIST_INFO = 24;
/// GFT flow entry identifier (NDIS 6.50).
pub const GftFlowEntryId: NDIS_NET_BUFFER_LIST_INFO = 25;
/// Entries of `NetBufferListInfo` on x64 for an NDIS 6.50 build (the
/// enum's last value; see the module docs for 6.80).
pub const MaxNetBufferListInfo: NDIS_NET_BUFFER_LIST_INFO = 26;

/// A list of packets handed between drivers as one unit
/// (`ndis/nbl.h:171`; 352 bytes on x64 for NDIS 6.50).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_BUFFER_LIST {
    /// Next list of the chain (`NET_BUFFER_LIST_NEXT_NBL`).
    pub Next: *mut NET_BUFFER_LIST,
    /// First packet of this list (`NET_BUFFER_LIST_FIRST_NB`).
    pub FirstNetBuffer: *mut NET_BUFFER,
    /// Context area chain (`NET_BUFFER_LIST_CONTEXT_DATA_START`).
    pub Context: *mut NET_BUFFER_LIST_CONTEXT,
    /// Parent of a clone or fragment, else null.
    pub ParentNetBufferList: *mut NET_BUFFER_LIST,
    /// Pool the list came from.
    pub NdisPoolHandle: NDIS_HANDLE,
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `NdisReserved`.
    pub NdisReservedAlign: MEMORY_ALLOCATION_ALIGNED,
    /// Owned by NDIS.
    pub NdisReserved: [PVOID; 2],
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `ProtocolReserved`.
    pub ProtocolReservedAlign: MEMORY_ALLOCATION_ALIGNED,
    /// Owned by the current protocol owner.
    pub ProtocolReserved: [PVOID; 4],
    /// `DECLSPEC_ALIGN(MEMORY_ALLOCATION_ALIGNMENT)` of `MiniportReserved`.
    pub MiniportReservedAlign: MEMORY_ALLOCATION_ALIGNED,
    /// Owned by the current miniport owner.
    pub MiniportReserved: [PVOID; 2],
    /// Scratch space of the current owner.
    pub Scratch: PVOID,
    /// Binding or adapter that sent or indicated the list; set by NDIS.
    pub SourceHandle: NDIS_HANDLE,
    /// Public `NDIS_NBL_FLAGS_*`.
    pub NblFlags: ULONG,
    /// Outstanding clones and fragments of this list.
    pub ChildRefCount: i32,
    /// Private `NBL_FLAGS_*` of NDIS, protocols and miniports.
    pub Flags: ULONG,
    /// Completion status (`NET_BUFFER_LIST_STATUS`); in C a union with
    /// the NDIS-private `ULONG NdisReserved2`.
    pub Status: NDIS_STATUS,
    /// Out-of-band information, indexed by [`NDIS_NET_BUFFER_LIST_INFO`]
    /// (`NET_BUFFER_LIST_INFO`).
    pub NetBufferListInfo: [PVOID; MaxNetBufferListInfo as usize],
}

impl NET_BUFFER_LIST {
    /// A list whose only packet is `first` and every other field is zero or
    /// null (what a pool allocation starts from).
    pub const fn new(first: *mut NET_BUFFER) -> Self {
        Self {
            Next: ptr::null_mut(),
            FirstNetBuffer: first,
            Context: ptr::null_mut(),
            ParentNetBufferList: ptr::null_mut(),
            NdisPoolHandle: ptr::null_mut(),
            NdisReservedAlign: MEMORY_ALLOCATION_ALIGNED([]),
            NdisReserved: [ptr::null_mut(); 2],
            ProtocolReservedAlign: MEMORY_ALLOCATION_ALIGNED([]),
            ProtocolReserved: [ptr::null_mut(); 4],
            MiniportReservedAlign: MEMORY_ALLOCATION_ALIGNED([]),
            MiniportReserved: [ptr::null_mut(); 2],
            Scratch: ptr::null_mut(),
            SourceHandle: ptr::null_mut(),
            NblFlags: 0,
            ChildRefCount: 0,
            Flags: 0,
            Status: 0,
            NetBufferListInfo: [ptr::null_mut(); MaxNetBufferListInfo as usize],
        }
    }
}

/// Offset of `NET_BUFFER_LIST.Next` (the structure's first member), x64.
pub const NET_BUFFER_LIST_NEXT_OFFSET: usize = 0;
/// Offset of `NET_BUFFER_LIST.Status` on x64 (`NET_BUFFER_LIST_STATUS`),
/// after the 16-byte link union and 15 pointer-sized and 4-byte members;
/// `MaxNetBufferListInfo` changes the structure's size between NDIS
/// versions, never this offset.
pub const NET_BUFFER_LIST_STATUS_OFFSET: usize = 0x8C;

#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::offset_of!(NET_BUFFER_LIST, Next) == NET_BUFFER_LIST_NEXT_OFFSET);
#[cfg(target_pointer_width = "64")]
const _: () =
    assert!(core::mem::offset_of!(NET_BUFFER_LIST, Status) == NET_BUFFER_LIST_STATUS_OFFSET);

/// `NET_BUFFER_LIST.Flags` bits protocols may use (NDIS 6.30 and later).
pub const NBL_FLAGS_PROTOCOL_RESERVED: ULONG = 0xFFF0_0003;
/// `NET_BUFFER_LIST.Flags` bits miniports may use.
pub const NBL_FLAGS_MINIPORT_RESERVED: ULONG = 0x0000_F000;
/// `NET_BUFFER_LIST.Flags` scratch bits of the current owner.
pub const NBL_FLAGS_SCRATCH: ULONG = 0x000F_0000;
/// `NET_BUFFER_LIST.Flags` bits NDIS keeps (NDIS 6.30 and later).
pub const NBL_FLAGS_NDIS_RESERVED: ULONG = 0x0000_0FFC;

/// `NblFlags`: the sender's data must not be modified.
pub const NDIS_NBL_FLAGS_SEND_READ_ONLY: ULONG = 0x0000_0001;
/// `NblFlags`: the receiver must not modify the data.
pub const NDIS_NBL_FLAGS_RECV_READ_ONLY: ULONG = 0x0000_0002;
/// `NblFlags`: header and data are split.
pub const NDIS_NBL_FLAGS_HD_SPLIT: ULONG = 0x0000_0100;
/// `NblFlags`: an IPv4 packet.
pub const NDIS_NBL_FLAGS_IS_IPV4: ULONG = 0x0000_0200;
/// `NblFlags`: an IPv6 packet.
pub const NDIS_NBL_FLAGS_IS_IPV6: ULONG = 0x0000_0400;
/// `NblFlags`: a TCP packet.
pub const NDIS_NBL_FLAGS_IS_TCP: ULONG = 0x0000_0800;
/// `NblFlags`: a UDP packet.
pub const NDIS_NBL_FLAGS_IS_UDP: ULONG = 0x0000_1000;
/// `NblFlags`: split at the upper-layer protocol header.
pub const NDIS_NBL_FLAGS_SPLIT_AT_UPPER_LAYER_PROTOCOL_HEADER: ULONG = 0x0000_2000;
/// `NblFlags`: split at the upper-layer protocol payload.
pub const NDIS_NBL_FLAGS_SPLIT_AT_UPPER_LAYER_PROTOCOL_PAYLOAD: ULONG = 0x0000_4000;
/// `NblFlags`: a layer-2 loopback list.
pub const NDIS_NBL_FLAGS_IS_LOOPBACK_PACKET: ULONG = 0x0000_8000;

// ---------------------------------------------------------------------
// Pools (ndis/nblapi.h:20).

/// `NET_BUFFER_LIST_POOL_PARAMETERS` revision 1 (NDIS 6.0).
pub const NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1: UCHAR = 1;
/// `NET_BUFFER_LIST_POOL_PARAMETERS` revision 2 (NDIS 6.87, adds `Flags`).
pub const NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_2: UCHAR = 2;
/// `RTL_SIZEOF_THROUGH_FIELD(NET_BUFFER_LIST_POOL_PARAMETERS, DataSize)`.
pub const NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NET_BUFFER_LIST_POOL_PARAMETERS, DataSize);
/// `RTL_SIZEOF_THROUGH_FIELD(NET_BUFFER_LIST_POOL_PARAMETERS, Flags)`.
pub const NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_2: u16 =
    crate::sizeof_through_field!(NET_BUFFER_LIST_POOL_PARAMETERS, Flags);
/// Revision-2 pool flag: NDIS verifies the pool's use (NDIS 6.87).
pub const NET_BUFFER_LIST_POOL_FLAG_VERIFY: ULONG = 0x0000_0001;

/// `ProtocolId` of a pool: no specific protocol (`ntddndis.h`).
pub const NDIS_PROTOCOL_ID_DEFAULT: UCHAR = 0x00;
/// `ProtocolId` of a pool: TCP/IP.
pub const NDIS_PROTOCOL_ID_TCP_IP: UCHAR = 0x02;
/// `ProtocolId` of a pool: IPX.
pub const NDIS_PROTOCOL_ID_IPX: UCHAR = 0x06;
/// `ProtocolId` of a pool: NetBEUI.
pub const NDIS_PROTOCOL_ID_NBF: UCHAR = 0x07;
/// Largest protocol ID.
pub const NDIS_PROTOCOL_ID_MAX: UCHAR = 0x0F;
/// Mask of the protocol ID bits.
pub const NDIS_PROTOCOL_ID_MASK: UCHAR = 0x0F;

/// What `NdisAllocateNetBufferListPool` is given (`ndis/nblapi.h:27`).
/// The declaration includes the revision-2 `Flags`; a 6.50 driver sends
/// revision 1 (`Header.Size` through `DataSize`) and NDIS reads no more.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NET_BUFFER_LIST_POOL_PARAMETERS {
    /// `NDIS_OBJECT_TYPE_DEFAULT`.
    pub Header: NDIS_OBJECT_HEADER,
    /// `NDIS_PROTOCOL_ID_*` stamped on each list.
    pub ProtocolId: UCHAR,
    /// `TRUE`: each list comes with one `NET_BUFFER`.
    pub fAllocateNetBuffer: BOOLEAN,
    /// Context bytes preallocated per list (a multiple of
    /// `MEMORY_ALLOCATION_ALIGNMENT`).
    pub ContextSize: USHORT,
    /// Pool tag.
    pub PoolTag: ULONG,
    /// Data bytes preallocated per buffer (with an MDL), or 0.
    pub DataSize: ULONG,
    /// `NET_BUFFER_LIST_POOL_FLAG_*` (revision 2 only).
    pub Flags: ULONG,
}

impl NET_BUFFER_LIST_POOL_PARAMETERS {
    /// Revision-1 parameters.
    pub const fn new(
        ProtocolId: UCHAR,
        fAllocateNetBuffer: bool,
        ContextSize: USHORT,
        PoolTag: ULONG,
        DataSize: ULONG,
    ) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_DEFAULT,
                NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1,
                NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1,
            ),
            ProtocolId,
            fAllocateNetBuffer: if fAllocateNetBuffer { 1 } else { 0 },
            ContextSize,
            PoolTag,
            DataSize,
            Flags: 0,
        }
    }
}

/// `NET_BUFFER_ALLOCATE_MDL` (`ndis/nblapi.h:204`): allocates an MDL of at
/// least `*BufferSize` bytes for `NdisRetreatNetBufferDataStart`
/// (`<= DISPATCH_LEVEL`).
pub type NET_BUFFER_ALLOCATE_MDL = unsafe extern "win64" fn(BufferSize: *mut ULONG) -> *mut MDL;
/// Nullable [`NET_BUFFER_ALLOCATE_MDL`] (`NET_BUFFER_ALLOCATE_MDL_HANDLER`).
pub type NET_BUFFER_ALLOCATE_MDL_HANDLER = Option<NET_BUFFER_ALLOCATE_MDL>;

/// `NET_BUFFER_FREE_MDL` (`ndis/nblapi.h:215`): frees an MDL that
/// `NET_BUFFER_ALLOCATE_MDL` returned (`<= DISPATCH_LEVEL`).
pub type NET_BUFFER_FREE_MDL = unsafe extern "win64" fn(Mdl: *mut MDL);
/// Nullable [`NET_BUFFER_FREE_MDL`] (`NET_BUFFER_FREE_MDL_HANDLER`).
pub type NET_BUFFER_FREE_MDL_HANDLER = Option<NET_BUFFER_FREE_MDL>;
