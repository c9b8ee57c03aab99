Blayers.0.0.bn2.running_meanJ@÷;‹=óÙ…>J#Î½×¸O>ãÂ
?­\>`G>ö^Œ=	æ•=NÍî½g;Š=¼°>…r>Ó+p½Ã„C½Wb<¾