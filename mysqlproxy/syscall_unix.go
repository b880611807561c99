package mysqlproxy

import "syscall"

const syscallEMFILE = syscall.EMFILE
