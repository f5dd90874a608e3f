package explore

import (
	"fmt"
	"net"
)

// CheckAddr is the page's listening policy, for the address a server of
// it is about to listen on: addr must name a host (":8080" or "" would
// listen on every interface), and unless public is set the host must be
// a loopback address: the page is a local tool, and exposing it to the
// network should be a decision the user writes down. The errors name
// `infer explore`'s flags, --addr and --public.
func CheckAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("explore: --addr %q: want HOST:PORT, such as 127.0.0.1:8080", addr)
	}
	if host == "" {
		return fmt.Errorf("explore: --addr %q names no host, which would listen on every interface; give one, such as 127.0.0.1:8080", addr)
	}
	if public || isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("explore: --addr %q is not a loopback address and would serve the page to the network; add --public to mean it", addr)
}

// isLoopbackHost reports whether host is "localhost" or a loopback IP.
// Other names are not resolved: a name's address can change between the
// check and the listen.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
