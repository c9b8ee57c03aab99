
B	head.biasJ(ðÅ¼$†<þµ½s=<e<;Á½^nJ=Ztœ½j¤½X½L>