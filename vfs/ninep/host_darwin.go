package ninep

// host is this OS's numbers: macOS's (host_darwin_table.go).
var host = newHostNumbers(darwinTable)
