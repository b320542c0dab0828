SET LOCAL lock_timeout = '5s'
