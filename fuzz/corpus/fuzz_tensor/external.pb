Bxj
locationext.binj
offset128j
length64p