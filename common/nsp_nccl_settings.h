/* nsp_nccl_settings.h - NCCL's environment variables: one table, one line
 * each, with what a difference between the processes of one job means.
 *
 * The shim keeps every NCCL_* variable in a process's snapshot
 * (shim/nsp_env.c); the analyzer's env-process rule asks this table which
 * differences are findings (docs/REPORT.md, rule 6, "NCCL settings": the
 * same rows, a test compares them).
 *
 * Source: NCCL's environment-variable documentation (docs.nvidia.com/
 * deeplearning/nccl/user-guide/docs/env.html and troubleshooting/
 * logging.html) and, for the names it leaves out, where NCCL's own source
 * (src/, NCCL_PARAM and ncclGetEnv, 2.28 to 2.30) reads them.
 *
 * NSP_NCCL_SETTINGS(X) calls X(name, class, meaning) once per variable:
 *   name     the variable, "NCCL_PROTO";
 *   class    enum nsp_setting_class;
 *   meaning  what it sets, one line.
 * Rows are sorted by name (a test checks).  A name not in the table is
 * compared, but a difference is a note saying its class is unknown, never
 * a finding; so is a name containing "RANK" (rank-specific). */
#ifndef NSP_NCCL_SETTINGS_H
#define NSP_NCCL_SETTINGS_H

/* What a difference between two processes of one job means. */
enum nsp_setting_class {
  /* Must match across the job: it changes what NCCL runs (algorithm,
   * protocol, buffers, channels, transports), which every rank computes
   * on its own and must agree on.  A difference is a finding. */
  NSP_SETTING_MATCH = 0,
  /* May differ per host: it names or tunes a host's own hardware (network
   * interfaces, HCAs, topology files).  A difference between the
   * processes of one host is a finding; between hosts, a note. */
  NSP_SETTING_HOST = 1,
  /* Rank-specific: per process by design (the bootstrap address of the
   * process that makes the unique id, the host identity a process claims,
   * how it launches its own work).  Never compared. */
  NSP_SETTING_RANK = 2,
  /* Diagnostics only: logging, dumps, profiling.  A difference is a note. */
  NSP_SETTING_DIAG = 3,
  /* Not in the table: compared, a difference is a note. */
  NSP_SETTING_UNKNOWN = 4,
};

#define NSP_NCCL_SETTINGS(X) \
  X("NCCL_ALGO", NSP_SETTING_MATCH, "algorithms NCCL may use (ring, tree, collnet, nvls, pat)") \
  X("NCCL_ALLOC_P2P_NET_LL_BUFFERS", NSP_SETTING_MATCH, "allocate LL buffers for send/recv over the network") \
  X("NCCL_BUFFSIZE", NSP_SETTING_MATCH, "size of the buffers between pairs of ranks (Simple protocol)") \
  X("NCCL_CGA_CLUSTER_SIZE", NSP_SETTING_MATCH, "CUDA thread block cluster size of NCCL's kernels") \
  X("NCCL_CHECK_POINTERS", NSP_SETTING_DIAG, "check the buffer pointers of every call (slow)") \
  X("NCCL_CHUNK_SIZE", NSP_SETTING_MATCH, "chunk size of the ring and tree algorithms") \
  X("NCCL_COLLNET_ENABLE", NSP_SETTING_MATCH, "use the CollNet (in-network reduction) algorithms") \
  X("NCCL_COLLNET_NODE_THRESHOLD", NSP_SETTING_MATCH, "nodes needed before CollNet is used") \
  X("NCCL_COMM_BLOCKING", NSP_SETTING_RANK, "whether this process's NCCL calls block (the config's blocking)") \
  X("NCCL_COMM_ID", NSP_SETTING_RANK, "bootstrap address of the process that makes the unique id") \
  X("NCCL_COMM_SPLIT_SHARE_RESOURCES", NSP_SETTING_MATCH, "split communicators share their parent's resources") \
  X("NCCL_CONF_FILE", NSP_SETTING_HOST, "file of NCCL settings read at start (a host's own path)") \
  X("NCCL_CROSS_NIC", NSP_SETTING_MATCH, "whether rings and trees may use different NICs on each node") \
  X("NCCL_CTA_POLICY", NSP_SETTING_MATCH, "how many thread blocks NCCL's kernels use (the config's CTAPolicy)") \
  X("NCCL_CUMEM_ENABLE", NSP_SETTING_MATCH, "allocate with cuMem (its memory handles are what peers import)") \
  X("NCCL_CUMEM_HOST_ENABLE", NSP_SETTING_MATCH, "host memory through cuMem (shared with peers)") \
  X("NCCL_DEBUG", NSP_SETTING_DIAG, "log level: VERSION, WARN, INFO, TRACE") \
  X("NCCL_DEBUG_FILE", NSP_SETTING_DIAG, "file the log goes to (%h host, %p pid)") \
  X("NCCL_DEBUG_SUBSYS", NSP_SETTING_DIAG, "subsystems the log covers") \
  X("NCCL_DEBUG_TIMESTAMP_FORMAT", NSP_SETTING_DIAG, "strftime format of the log's timestamps") \
  X("NCCL_DEBUG_TIMESTAMP_LEVELS", NSP_SETTING_DIAG, "log levels that get a timestamp") \
  X("NCCL_DMABUF_ENABLE", NSP_SETTING_HOST, "register GPU memory with the NIC through dma-buf (a host's driver support)") \
  X("NCCL_GDRCOPY_ENABLE", NSP_SETTING_HOST, "use GDRCopy for the proxy's flags (a host's driver support)") \
  X("NCCL_GRAPH_DUMP_FILE", NSP_SETTING_DIAG, "file NCCL writes its search's graphs to") \
  X("NCCL_GRAPH_DUMP_FILE_RANK", NSP_SETTING_DIAG, "the rank that writes NCCL_GRAPH_DUMP_FILE") \
  X("NCCL_GRAPH_FILE", NSP_SETTING_MATCH, "graphs (rings, trees) to use instead of searching") \
  X("NCCL_GRAPH_MIXING_SUPPORT", NSP_SETTING_RANK, "whether this process may mix graph-captured and plain calls") \
  X("NCCL_GRAPH_REGISTER", NSP_SETTING_MATCH, "register the buffers of CUDA-graph-captured calls (changes the algorithm)") \
  X("NCCL_HOSTID", NSP_SETTING_RANK, "the host identity this process claims (ranks on one box may be separate hosts)") \
  X("NCCL_IBVERBS_LIB", NSP_SETTING_HOST, "path of the libibverbs to load") \
  X("NCCL_IB_ADAPTIVE_ROUTING", NSP_SETTING_HOST, "use the fabric's adaptive routing") \
  X("NCCL_IB_ADDR_FAMILY", NSP_SETTING_HOST, "IP family of the RoCE GID to use") \
  X("NCCL_IB_ADDR_RANGE", NSP_SETTING_HOST, "IP range of the RoCE GID to use") \
  X("NCCL_IB_AR_THRESHOLD", NSP_SETTING_HOST, "message size from which adaptive routing is used") \
  X("NCCL_IB_DISABLE", NSP_SETTING_MATCH, "do not use InfiniBand/RoCE (fall back to sockets)") \
  X("NCCL_IB_ECE_ENABLE", NSP_SETTING_HOST, "use enhanced connection establishment") \
  X("NCCL_IB_GID_INDEX", NSP_SETTING_HOST, "GID index of the RoCE port (a host's NIC configuration)") \
  X("NCCL_IB_HCA", NSP_SETTING_RANK, "which HCAs and ports to use (often one per local rank, for GPU-NIC affinity)") \
  X("NCCL_IB_MERGE_NICS", NSP_SETTING_HOST, "merge the ports of a dual-port NIC into one device") \
  X("NCCL_IB_MERGE_VFS", NSP_SETTING_HOST, "merge virtual functions into one device") \
  X("NCCL_IB_PCI_RELAXED_ORDERING", NSP_SETTING_HOST, "use PCI relaxed ordering for IB memory") \
  X("NCCL_IB_PKEY", NSP_SETTING_HOST, "partition key index of the port") \
  X("NCCL_IB_QPS_PER_CONNECTION", NSP_SETTING_MATCH, "queue pairs per connection") \
  X("NCCL_IB_RETRY_CNT", NSP_SETTING_HOST, "IB retry count of this side's queue pairs") \
  X("NCCL_IB_ROCE_VERSION_NUM", NSP_SETTING_HOST, "RoCE version of the GID to use") \
  X("NCCL_IB_SL", NSP_SETTING_HOST, "IB service level") \
  X("NCCL_IB_SPLIT_DATA_ON_QPS", NSP_SETTING_MATCH, "split each message over the queue pairs of a connection") \
  X("NCCL_IB_TC", NSP_SETTING_HOST, "IB traffic class") \
  X("NCCL_IB_TIMEOUT", NSP_SETTING_HOST, "IB timeout of this side's queue pairs") \
  X("NCCL_IB_USE_INLINE", NSP_SETTING_HOST, "send small IB messages inline") \
  X("NCCL_IGNORE_CPU_AFFINITY", NSP_SETTING_HOST, "ignore the job's CPU affinity, use the GPU's") \
  X("NCCL_IGNORE_DISABLED_P2P", NSP_SETTING_DIAG, "do not warn that P2P is disabled") \
  X("NCCL_LAUNCH_MODE", NSP_SETTING_RANK, "how this process launches kernels for several GPUs (PARALLEL, GROUP)") \
  X("NCCL_LAUNCH_ORDER_IMPLICIT", NSP_SETTING_RANK, "order this process's launches on several communicators by host program order") \
  X("NCCL_LL128_BUFFSIZE", NSP_SETTING_MATCH, "size of the LL128 protocol's buffers") \
  X("NCCL_LL128_NTHREADS", NSP_SETTING_MATCH, "threads per block for the LL128 protocol") \
  X("NCCL_LL_BUFFSIZE", NSP_SETTING_MATCH, "size of the LL protocol's buffers") \
  X("NCCL_LOCAL_REGISTER", NSP_SETTING_MATCH, "register user buffers given to ncclCommRegister (changes the algorithm)") \
  X("NCCL_MAX_CTAS", NSP_SETTING_MATCH, "most thread blocks (channels) per collective") \
  X("NCCL_MAX_NCHANNELS", NSP_SETTING_MATCH, "most channels") \
  X("NCCL_MAX_NRINGS", NSP_SETTING_MATCH, "most channels (old name of NCCL_MAX_NCHANNELS)") \
  X("NCCL_MAX_P2P_NCHANNELS", NSP_SETTING_MATCH, "most channels for send/recv") \
  X("NCCL_MIN_CTAS", NSP_SETTING_MATCH, "fewest thread blocks (channels) per collective") \
  X("NCCL_MIN_NCHANNELS", NSP_SETTING_MATCH, "fewest channels") \
  X("NCCL_MIN_NRINGS", NSP_SETTING_MATCH, "fewest channels (old name of NCCL_MIN_NCHANNELS)") \
  X("NCCL_MIN_P2P_NCHANNELS", NSP_SETTING_MATCH, "fewest channels for send/recv") \
  X("NCCL_MNNVL_ENABLE", NSP_SETTING_MATCH, "use multi-node NVLink") \
  X("NCCL_NCHANNELS_PER_NET_PEER", NSP_SETTING_MATCH, "channels per remote peer for send/recv over the network") \
  X("NCCL_NET", NSP_SETTING_MATCH, "which network to use (IB, Socket, a plugin's)") \
  X("NCCL_NET_DISABLE_INTRA", NSP_SETTING_MATCH, "do not use the network between GPUs of one node") \
  X("NCCL_NET_GDR_LEVEL", NSP_SETTING_HOST, "how close NIC and GPU must be for GPU Direct RDMA (a host's topology)") \
  X("NCCL_NET_GDR_READ", NSP_SETTING_HOST, "send from GPU memory with GPU Direct RDMA reads") \
  X("NCCL_NET_PLUGIN", NSP_SETTING_HOST, "network plugin library to load (a host's own path)") \
  X("NCCL_NET_SHARED_BUFFERS", NSP_SETTING_MATCH, "share network buffers between peers") \
  X("NCCL_NET_SHARED_COMMS", NSP_SETTING_MATCH, "share network connections between channels (PXN)") \
  X("NCCL_NSOCKS_PERTHREAD", NSP_SETTING_MATCH, "sockets per helper thread of the socket transport") \
  X("NCCL_NTHREADS", NSP_SETTING_MATCH, "threads per block of NCCL's kernels") \
  X("NCCL_NVB_DISABLE", NSP_SETTING_MATCH, "do not route through NVLink via an intermediate GPU") \
  X("NCCL_NVLS_ENABLE", NSP_SETTING_MATCH, "use NVLink SHARP (NVLS)") \
  X("NCCL_NVLS_NCHANNELS", NSP_SETTING_MATCH, "channels of the NVLS algorithms") \
  X("NCCL_NVTX_DISABLE", NSP_SETTING_DIAG, "do not emit NVTX ranges") \
  X("NCCL_P2P_DIRECT_DISABLE", NSP_SETTING_MATCH, "do not access peers' buffers directly within a process") \
  X("NCCL_P2P_DISABLE", NSP_SETTING_MATCH, "do not use peer-to-peer (NVLink, PCI) between GPUs") \
  X("NCCL_P2P_LEVEL", NSP_SETTING_MATCH, "how close two GPUs must be for peer-to-peer") \
  X("NCCL_P2P_LL_THRESHOLD", NSP_SETTING_MATCH, "message size up to which send/recv use the LL protocol") \
  X("NCCL_P2P_NET_CHUNKSIZE", NSP_SETTING_MATCH, "chunk size of send/recv over the network") \
  X("NCCL_P2P_NVL_CHUNKSIZE", NSP_SETTING_MATCH, "chunk size of send/recv over NVLink") \
  X("NCCL_P2P_PCI_CHUNKSIZE", NSP_SETTING_MATCH, "chunk size of send/recv over PCI") \
  X("NCCL_P2P_PXN_LEVEL", NSP_SETTING_MATCH, "when send/recv go through another GPU's NIC (PXN)") \
  X("NCCL_PAT_ENABLE", NSP_SETTING_MATCH, "use the PAT algorithm") \
  X("NCCL_PROFILER_PLUGIN", NSP_SETTING_DIAG, "profiler plugin library to load") \
  X("NCCL_PROTO", NSP_SETTING_MATCH, "protocols NCCL may use (LL, LL128, Simple)") \
  X("NCCL_PROXY_CPUSET", NSP_SETTING_RANK, "CPUs of this process's proxy thread (near its GPU)") \
  X("NCCL_PXN_DISABLE", NSP_SETTING_MATCH, "do not send through another GPU's NIC (PXN)") \
  X("NCCL_RAS_ADDR", NSP_SETTING_DIAG, "address of the RAS (reliability) service") \
  X("NCCL_RAS_ENABLE", NSP_SETTING_DIAG, "run the RAS (reliability) service") \
  X("NCCL_RUNTIME_CONNECT", NSP_SETTING_MATCH, "connect peers when first needed instead of at creation") \
  X("NCCL_SET_STACK_SIZE", NSP_SETTING_RANK, "set this process's CUDA stack size for NCCL's kernels") \
  X("NCCL_SET_THREAD_NAME", NSP_SETTING_DIAG, "name NCCL's threads") \
  X("NCCL_SHM_DISABLE", NSP_SETTING_MATCH, "do not use shared memory between processes") \
  X("NCCL_SOCKET_FAMILY", NSP_SETTING_HOST, "IP family of the sockets (AF_INET, AF_INET6)") \
  X("NCCL_SOCKET_IFNAME", NSP_SETTING_HOST, "which IP interfaces to use (a host's own interface names)") \
  X("NCCL_SOCKET_NTHREADS", NSP_SETTING_MATCH, "helper threads per connection of the socket transport") \
  X("NCCL_TOPO_DUMP_FILE", NSP_SETTING_DIAG, "file NCCL writes the topology it found to") \
  X("NCCL_TOPO_DUMP_FILE_RANK", NSP_SETTING_DIAG, "the rank that writes NCCL_TOPO_DUMP_FILE") \
  X("NCCL_TOPO_FILE", NSP_SETTING_HOST, "topology file describing a host's PCI and NICs") \
  X("NCCL_TUNER_PLUGIN", NSP_SETTING_MATCH, "tuner plugin library choosing algorithms and protocols") \
  X("NCCL_WARN_ENABLE_DEBUG_INFO", NSP_SETTING_DIAG, "print debug information with warnings") \
  X("NCCL_WORK_FIFO_BYTES", NSP_SETTING_RANK, "size of this process's queue of work for the GPU")

/* The class of an environment variable named `name` (NSP_SETTING_UNKNOWN
 * for a name not in the table; NSP_SETTING_RANK for one not in it that
 * contains "RANK"); *meaning (may be NULL) its line, "" when unknown. */
enum nsp_setting_class nsp_nccl_setting_class(const char *name, const char **meaning);
/* The class in words, as docs/REPORT.md writes it: "must match", "per
 * host", "rank-specific", "diagnostics", "unknown". */
const char *nsp_setting_class_name(enum nsp_setting_class c);

#endif /* NSP_NCCL_SETTINGS_H */
