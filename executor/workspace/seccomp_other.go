//go:build !amd64

package workspace

// No system call table for this architecture: commands run without the
// seccomp filter (docs/security.md says so).
const (
	seccompArch        = 0
	seccompX32Bit      = 0
	seccompClone       = 0
	seccompClone3      = 0
	seccompUnshare     = 0
	seccompPersonality = 0
)

var seccompDenied []uint32
