package workspace

// System call numbers of linux/amd64 (arch/x86/entry/syscalls/syscall_64.tbl).
const (
	seccompArch        = 0xc000003e // AUDIT_ARCH_X86_64
	seccompX32Bit      = 0x40000000 // __X32_SYSCALL_BIT
	seccompClone       = 56
	seccompClone3      = 435
	seccompUnshare     = 272
	seccompPersonality = 135
)

// seccompDenied are refused with EPERM whatever their arguments.
var seccompDenied = []uint32{
	101, // ptrace
	103, // syslog
	134, // uselib
	153, // vhangup
	155, // pivot_root
	156, // _sysctl
	159, // adjtimex
	161, // chroot
	163, // acct
	164, // settimeofday
	165, // mount
	166, // umount2
	167, // swapon
	168, // swapoff
	169, // reboot
	170, // sethostname
	171, // setdomainname
	172, // iopl
	173, // ioperm
	175, // init_module
	176, // delete_module
	179, // quotactl
	212, // lookup_dcookie
	227, // clock_settime
	246, // kexec_load
	248, // add_key
	249, // request_key
	250, // keyctl
	298, // perf_event_open
	303, // name_to_handle_at
	304, // open_by_handle_at
	305, // clock_adjtime
	308, // setns
	310, // process_vm_readv
	311, // process_vm_writev
	313, // finit_module
	320, // kexec_file_load
	321, // bpf
	323, // userfaultfd
	428, // open_tree
	429, // move_mount
	430, // fsopen
	431, // fsconfig
	432, // fsmount
	433, // fspick
	442, // mount_setattr
	443, // quotactl_fd
}
