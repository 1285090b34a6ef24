/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the kernel tells of every TCP socket of this network namespace in
 * one sock_diag dump, both families at once (NETLINK_SOCK_DIAG,
 * inet_diag): inode, state, addresses, queues and buffer sizes. A
 * checkpoint asks once per process (tcp_diag_load) instead of asking
 * each socket (family, type, protocol, getsockname, getpeername,
 * SO_ACCEPTCONN, SO_RCVBUF, SO_SNDBUF, SIOCOUTQ: 9 system calls per
 * socket, most of a checkpoint's cost with 1,000 connections;
 * docs/performance.md).
 *
 * The table lives in mmap'd memory (no malloc while threads are
 * stopped), with an index of it by inode.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "internal.h"

/* The states whose sockets the dump describes as getsockname and
 * getpeername would (socket_state_save_tcp); not TIME_WAIT and request
 * sockets, which no descriptor holds and a busy host has thousands of. */
#define STATES_DESCRIBED \
	((1U << TCP_ESTABLISHED) | (1U << TCP_FIN_WAIT1) | \
	 (1U << TCP_FIN_WAIT2) | (1U << TCP_CLOSE_WAIT) | \
	 (1U << TCP_LAST_ACK) | (1U << TCP_CLOSING) | (1U << TCP_LISTEN))

static struct tcp_diag_entry *table;
static size_t nentries, capacity;
static int loaded;

static struct tcp_diag_entry *table_slot(void)
{
	size_t cap = capacity ? capacity * 2 : 4096;
	void *p;

	if (nentries < capacity)
		return &table[nentries++];
	p = table ? mremap(table, capacity * sizeof(*table),
			   cap * sizeof(*table), MREMAP_MAYMOVE)
		  : mmap(NULL, cap * sizeof(*table), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	table = p;
	capacity = cap;
	return &table[nentries++];
}

/* The address sock_diag gives, as getsockname/getpeername would: an
 * IPv6 link-local address carries the bound interface as its scope. */
static void fill_addr(struct sockaddr_storage *ss, int family,
		      const __be32 addr[4], __be16 port, uint32_t ifindex)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (void *)ss;

		in->sin_family = AF_INET;
		in->sin_port = port;
		memcpy(&in->sin_addr, addr, 4);
		return;
	}
	struct sockaddr_in6 *in6 = (void *)ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = port;
	memcpy(&in6->sin6_addr, addr, 16);
	if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) ||
	    IN6_IS_ADDR_MC_LINKLOCAL(&in6->sin6_addr))
		in6->sin6_scope_id = ifindex;
}

static void note_message(const struct nlmsghdr *nlh)
{
	const struct inet_diag_msg *m = NLMSG_DATA(nlh);
	const struct rtattr *a = (const void *)(m + 1);
	long alen = nlh->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	struct tcp_diag_entry *e;

	if (!m->idiag_inode || !(e = table_slot()))
		return;
	memset(e, 0, sizeof(*e));
	e->ino = m->idiag_inode;
	e->family = m->idiag_family;
	e->state = m->idiag_state;
	e->rqueue = m->idiag_rqueue;
	e->wqueue = m->idiag_wqueue;
	fill_addr(&e->addr, m->idiag_family, m->id.idiag_src,
		  m->id.idiag_sport, m->id.idiag_if);
	fill_addr(&e->peer, m->idiag_family, m->id.idiag_dst,
		  m->id.idiag_dport, m->id.idiag_if);
	for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		const uint32_t *mem = RTA_DATA(a);

		if (a->rta_type != INET_DIAG_SKMEMINFO ||
		    RTA_PAYLOAD(a) < SK_MEMINFO_SNDBUF * 4 + 4)
			continue;
		e->rcvbuf = mem[SK_MEMINFO_RCVBUF];
		e->sndbuf = mem[SK_MEMINFO_SNDBUF];
		e->has_buffers = 1;
	}
}

/* The answers to one dump request (sent on nl) into the table: 0 or
 * -errno. */
static int dump_into_table(int nl, const void *req, size_t len)
{
	static char reply[65536];

	if (send(nl, req, len, 0) != (ssize_t)len)
		return -errno;
	for (;;) {
		long n = recv(nl, reply, sizeof(reply), 0);
		const struct nlmsghdr *nlh = (const void *)reply;

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (; NLMSG_OK(nlh, n); nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return -EPROTO;
			if (nlh->nlmsg_type == SOCK_DIAG_BY_FAMILY ||
			    nlh->nlmsg_type == TCPDIAG_GETSOCK)
				note_message(nlh);
		}
	}
}

/* A dump request of type (msg: len bytes starting with its header),
 * zeroed past the header. */
static void dump_request_header(void *msg, size_t len, int type)
{
	struct nlmsghdr *nlh = msg;

	memset(msg, 0, len);
	nlh->nlmsg_len = len;
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
}

/* One family's dump (SOCK_DIAG_BY_FAMILY): 0 or -errno. */
static int dump_family(int nl, int family)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg;

	dump_request_header(&msg, sizeof(msg), SOCK_DIAG_BY_FAMILY);
	msg.req.sdiag_family = family;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = STATES_DESCRIBED;
	msg.req.idiag_ext = 1 << (INET_DIAG_SKMEMINFO - 1);
	return dump_into_table(nl, &msg, sizeof(msg));
}

/*
 * IPv4 and IPv6 in one dump: the older TCPDIAG_GETSOCK request takes
 * AF_UNSPEC for "both families" (SOCK_DIAG_BY_FAMILY needs one). Both
 * families' sockets sit in the same hash, which each dump walks whole:
 * one walk instead of two halves the dump's time (docs/performance.md).
 */
static int dump_both_families(int nl)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req req;
	} msg;

	dump_request_header(&msg, sizeof(msg), TCPDIAG_GETSOCK);
	msg.req.idiag_family = AF_UNSPEC;
	msg.req.idiag_states = STATES_DESCRIBED;
	msg.req.idiag_ext = 1 << (INET_DIAG_SKMEMINFO - 1);
	return dump_into_table(nl, &msg, sizeof(msg));
}

/* The table's order by inode: 16-byte keys sorted instead of the
 * ~300-byte entries themselves (2,000 entries with 1,000 connections). */
struct ino_key {
	uint64_t ino;
	size_t at;		/* index in table */
};

static struct ino_key *keys;
static size_t keys_len;		/* bytes mapped */

static void sift_down(size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		struct ino_key t;

		if (child + 1 < n && keys[child + 1].ino > keys[child].ino)
			child++;
		if (keys[root].ino >= keys[child].ino)
			return;
		t = keys[root];
		keys[root] = keys[child];
		keys[child] = t;
	}
}

/* By inode, in place (qsort may malloc, and threads are stopped):
 * 0, or -ENOMEM. */
static int sort_by_inode(void)
{
	void *p;

	if (keys)
		munmap(keys, keys_len);
	keys = NULL;
	keys_len = nentries * sizeof(*keys);
	if (!keys_len)
		return 0;
	p = mmap(NULL, keys_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	keys = p;
	for (size_t i = 0; i < nentries; i++)
		keys[i] = (struct ino_key){ table[i].ino, i };
	for (size_t i = nentries / 2; i-- > 0;)
		sift_down(i, nentries);
	for (size_t n = nentries; n > 1; n--) {
		struct ino_key t = keys[0];

		keys[0] = keys[n - 1];
		keys[n - 1] = t;
		sift_down(0, n - 1);
	}
	return 0;
}

/* The table made again (each checkpoint: the sockets change). Without
 * it (sock_diag refused) every socket is asked on its own. */
void tcp_diag_load(void)
{
	int nl, r = 0;

	nentries = 0;
	loaded = 0;
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return;
	r = dump_both_families(nl);
	if (r < 0) {	/* a kernel without the older request */
		nentries = 0;
		r = dump_family(nl, AF_INET);
		if (r == 0)
			r = dump_family(nl, AF_INET6);
	}
	close(nl);
	if (r < 0 || sort_by_inode() < 0)
		return;
	loaded = 1;
}

/* The entry of TCP socket ino, NULL when the dump did not list it. */
const struct tcp_diag_entry *tcp_diag_find(uint64_t ino)
{
	size_t lo = 0, hi = loaded ? nentries : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (keys[mid].ino == ino)
			return &table[keys[mid].at];
		if (keys[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The table's memory given back once the sockets are saved (it would
 * otherwise be saved in the image with the rest of the process). */
void tcp_diag_release(void)
{
	if (table)
		munmap(table, capacity * sizeof(*table));
	if (keys)
		munmap(keys, keys_len);
	table = NULL;
	keys = NULL;
	keys_len = 0;
	nentries = capacity = 0;
	loaded = 0;
}
