//! The NDK tables and counters Windows tools and SMB read from the bottled
//! driver through OIDs (being written).
