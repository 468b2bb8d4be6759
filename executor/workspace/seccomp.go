package workspace

import (
	"encoding/binary"
	"syscall"
)

// The seccomp filter is a classic BPF program over struct seccomp_data
// (nr at offset 0, arch at 4, the arguments from 16), which bubblewrap
// installs with --seccomp just before it runs the command. It refuses, with
// EPERM, the system calls no build needs and that widen what a process can
// reach: keyrings, tracing, mounts, modules, kexec, swap, reboot, BPF, perf,
// userfaultfd, new user namespaces, file handles, accounting, quotas, port
// I/O, clock and host name changes, and personality changes other than the
// usual ones. A program for another architecture is killed.

// Classic BPF opcodes (linux/bpf_common.h) and seccomp return values.
const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJsetK  = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	seccompRetKillProcess = 0x80000000
	seccompRetErrno       = 0x00050000
	seccompRetAllow       = 0x7fff0000

	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArg0 = 16 // low 32 bits on a little-endian machine

	cloneNewUser = 0x10000000
)

type bpfInsn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// seccompProgram returns the filter for this architecture, encoded for
// bwrap, or nil where the package has no system call table.
func seccompProgram() []byte {
	if seccompArch == 0 {
		return nil
	}
	eperm := seccompRetErrno | uint32(syscall.EPERM)
	enosys := seccompRetErrno | uint32(syscall.ENOSYS)
	prog := []bpfInsn{
		{code: bpfLdWAbs, k: seccompDataArch},
		{code: bpfJeqK, jt: 1, k: seccompArch},
		{code: bpfRetK, k: seccompRetKillProcess},
		{code: bpfLdWAbs, k: seccompDataNr},
	}
	if seccompX32Bit != 0 {
		// The x32 ABI's numbers would get past the table below.
		prog = append(prog,
			bpfInsn{code: bpfJgeK, jf: 1, k: seccompX32Bit},
			bpfInsn{code: bpfRetK, k: eperm},
		)
	}
	for _, nr := range seccompDenied {
		prog = append(prog,
			bpfInsn{code: bpfJeqK, jf: 1, k: nr},
			bpfInsn{code: bpfRetK, k: eperm},
		)
	}
	// clone3 passes its flags in memory, where a filter cannot look; ENOSYS
	// makes glibc fall back to clone, whose flags it can.
	prog = append(prog,
		bpfInsn{code: bpfJeqK, jf: 1, k: seccompClone3},
		bpfInsn{code: bpfRetK, k: enosys},
	)
	// clone and unshare: everything but a new user namespace, the one
	// namespace an unprivileged process can make and get capabilities in.
	for _, nr := range []uint32{seccompClone, seccompUnshare} {
		prog = append(prog,
			bpfInsn{code: bpfJeqK, jf: 4, k: nr},
			bpfInsn{code: bpfLdWAbs, k: seccompDataArg0},
			bpfInsn{code: bpfJsetK, jf: 1, k: cloneNewUser},
			bpfInsn{code: bpfRetK, k: eperm},
			bpfInsn{code: bpfRetK, k: seccompRetAllow},
		)
	}
	// personality: only the query and the personas Docker's default
	// profile allows (PER_LINUX, PER_LINUX32, UNAME26 and both).
	allowed := []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}
	prog = append(prog,
		bpfInsn{code: bpfJeqK, jf: uint8(len(allowed) + 2), k: seccompPersonality},
		bpfInsn{code: bpfLdWAbs, k: seccompDataArg0},
	)
	for i, p := range allowed {
		prog = append(prog, bpfInsn{code: bpfJeqK, jt: uint8(len(allowed) - i), k: p})
	}
	prog = append(prog,
		bpfInsn{code: bpfRetK, k: eperm},
		bpfInsn{code: bpfRetK, k: seccompRetAllow},
	)

	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out
}
